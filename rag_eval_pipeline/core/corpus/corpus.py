"""Loading a folder of documents into a Corpus, refusing files that would give wrong offsets and
symbolic links that lead out of the folder.

Every file whose extension a reader knows (core/corpus/document_formats.py: markdown, text, reST, HTML) is a
document; a file with another extension is listed in ``Corpus.skipped`` and not read, so a PDF or an
image beside the documents never fails a run; hidden files and folders (``.git``, ``.DS_Store``) are
not looked at. A known file that cannot be read or decoded is an error naming it.

A link whose target lies outside the corpus folder is refused, never followed or skipped: what it
points at (``/etc/passwd``, a private note) would otherwise go into chunks, vector payloads, LLM prompts
and LangSmith. A link that stays inside the folder, and a corpus folder that is itself a link, are fine.
A link that leads to no document (a loop, a missing target, a linked folder the glob does not enter) is
listed in ``Corpus.skipped_links`` with its reason, never dropped in silence.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath, PureWindowsPath

from ..errors import WORKSPACE_HINT, CorpusError
from ..types import Document, DocumentId
from .document_formats import KNOWN_EXTENSIONS, count_by_extension, describe_counts, format_of

# Every file, filtered by the known extensions: a glob names which files, the extension how to read them.
DEFAULT_CORPUS_GLOB = "**/*"


@dataclass(frozen=True)
class Corpus:
    documents: tuple[Document, ...]
    root: str = ""
    # Files under the folder matching the glob whose extension no reader knows (relative POSIX paths).
    skipped: tuple[str, ...] = field(default=(), compare=False)
    # Symbolic links matching the glob that lead to no document, each with its reason.
    skipped_links: tuple[SkippedLink, ...] = field(default=(), compare=False)
    _by_id: Mapping[DocumentId, Document] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id: dict[DocumentId, Document] = {}
        for doc in self.documents:
            if doc.doc_id in by_id:
                raise CorpusError(f"document id {doc.doc_id!r} occurs twice in the corpus")
            by_id[doc.doc_id] = doc
        object.__setattr__(self, "_by_id", by_id)

    @classmethod
    def from_folder(cls, path: str | Path, glob: str | None = DEFAULT_CORPUS_GLOB) -> Corpus:
        """Every document under ``path`` matching ``glob`` (None: the default, every file); doc id =
        path relative to ``path``, POSIX style. Matches with an unknown extension are skipped and
        listed in ``skipped``."""
        glob = glob or DEFAULT_CORPUS_GLOB
        root = Path(path)
        if not root.is_dir():
            raise CorpusError(
                f"corpus folder {root} does not exist or is not a folder: set `corpus` in the workspace's "
                f"rag-eval.yaml to your documents' folder, or {WORKSPACE_HINT}"
            )
        listing = corpus_files(root, glob)
        if not listing.files:
            if listing.skipped:
                raise CorpusError(
                    f"no document in {root}: the {len(listing.skipped)} files matching {glob!r} have "
                    f"extensions the corpus does not read ({describe_counts(count_by_extension(listing.skipped))}); "
                    f"the formats read are {', '.join(KNOWN_EXTENSIONS)}: convert the documents to one of "
                    f"them, or change the glob"
                )
            raise CorpusError(f"no file in {root} matches {glob!r}: add documents or change the glob")
        documents = []
        for file in listing.files:
            rel = file.relative_to(root).as_posix()
            documents.append(
                Document(DocumentId(rel), read_document_text(file), rel.split("/")[0] if "/" in rel else "")
            )
        return cls(tuple(documents), str(root), listing.skipped, listing.skipped_links)

    def __getitem__(self, doc_id: str) -> Document:
        try:
            return self._by_id[DocumentId(doc_id)]
        except KeyError:
            raise KeyError(f"document {doc_id!r} is not in the corpus") from None

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._by_id

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def total_characters(self) -> int:
        return sum(len(d.text) for d in self.documents)

    def documents_per_format(self) -> dict[str, int]:
        """How many documents each format has (format name -> count, by name; formats absent left out)."""
        counts: dict[str, int] = {}
        for doc in self.documents:
            fmt = format_of(doc.doc_id)
            name = fmt.name if fmt is not None else "unknown"
            counts[name] = counts.get(name, 0) + 1
        return dict(sorted(counts.items()))

    @cached_property
    def sha256(self) -> str:
        """Hash of every (doc id, content hash): two runs on the same corpus share it."""
        digest = hashlib.sha256()
        for doc in sorted(self.documents, key=lambda d: d.doc_id):
            digest.update(f"{doc.doc_id}\0{doc.sha256}\n".encode())
        return digest.hexdigest()


@dataclass(frozen=True)
class SkippedLink:
    """A symbolic link the glob matched that leads to no document, and why."""

    path: str  # relative POSIX path
    reason: str

    def __str__(self) -> str:
        return f"{self.path} ({self.reason})"


def describe_skipped_links(links: Sequence[SkippedLink], shown: int = 10) -> str:
    """The warning of a load that met such links, naming the first ``shown`` with their reasons."""
    names = ", ".join(map(str, links[:shown])) + (
        f" (+{len(links) - shown} more)" if len(links) > shown else ""
    )
    return f"skipped {len(links)} symbolic links that lead to no document: {names}; fix or remove them"


@dataclass(frozen=True)
class CorpusFiles:
    # The documents to load, sorted; then the matches with an unknown extension (relative POSIX paths).
    files: tuple[Path, ...]
    skipped: tuple[str, ...]
    skipped_links: tuple[SkippedLink, ...] = ()


def glob_problem(glob: str) -> str | None:
    """Why ``glob`` cannot select files of the corpus folder (None: it can). It is matched under the
    folder, so an absolute pattern (which pathlib refuses with a NotImplementedError) or one that climbs
    out with ``..`` (whose matches are not in the folder) is refused with this reason."""
    if PurePosixPath(glob).is_absolute() or PureWindowsPath(glob).anchor:
        return "is absolute"
    if ".." in PurePosixPath(glob).parts:
        return "climbs out of the corpus folder with '..'"
    return None


def corpus_files(root: Path, glob: str) -> CorpusFiles:
    """The files under ``root`` matching ``glob``, as ``Corpus.from_folder`` and the document sensor's
    scan see them: those of a known format to load, the others skipped (never read); hidden files and
    folders are left out. A CorpusError names a symbolic link to a document outside ``root``, and a
    glob that does not select under ``root``."""
    problem = glob_problem(glob)
    if problem:
        raise CorpusError(
            f"the glob {glob!r} {problem}: a glob is relative to the corpus folder {root} and selects files "
            "under it, e.g. '**/*.md' or 'guides/*.md'; to read documents elsewhere, use their folder as "
            "the corpus"
        )
    base = Path(os.path.realpath(root))
    files = []
    skipped = []
    links = []
    for file in sorted(root.glob(glob)):
        rel = file.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if not file.is_file():  # a folder, or a link that leads to no file (listed with its reason)
            if file.is_symlink():
                links.append(SkippedLink(rel.as_posix(), _why_no_document(file, glob)))
            continue
        if format_of(file) is None:
            skipped.append(rel.as_posix())
            continue
        target = Path(os.path.realpath(file))
        if base not in target.parents:
            link = _first_link(root, file)
            points_to = os.readlink(link) if link.is_symlink() else target
            raise CorpusError(
                f"{link} is a symbolic link to {points_to}, which leads outside the corpus folder "
                f"{root} (to {target}): nothing outside the folder is loaded, so its content cannot reach "
                f"chunks, vector payloads, LLM prompts or LangSmith; copy the document into {root} if it "
                f"belongs to the corpus, or remove the link"
            )
        files.append(file)
    return CorpusFiles(tuple(files), tuple(skipped), tuple(links))


def _why_no_document(link: Path, glob: str) -> str:
    """Why the symbolic link ``link`` gives no document."""
    try:
        os.stat(link)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links"
        return f"a broken link: its target {os.readlink(link)} does not exist"
    target = Path(os.path.realpath(link))
    if not target.is_dir():
        return "its target is not a regular file"
    holder = Path(os.path.realpath(link.parent))
    if target == holder or target in holder.parents:
        return "a link to a folder that holds it: a loop"
    return f"a linked folder, which the glob {glob!r} does not enter: link its files, or copy them in"


def _first_link(root: Path, file: Path) -> Path:
    """The link that leads out: ``file`` itself or the first linked folder on the way to it."""
    current = root
    for part in file.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return current
    return file


def read_document_text(file: Path) -> str:
    """The document's text: the file decoded as UTF-8 with newlines untouched (a leading BOM is
    dropped), then read by its format's reader (HTML reduced to its text); offsets index this text."""
    fmt = format_of(file)
    if fmt is None:
        raise CorpusError(
            f"{file} has an extension the corpus does not read; the formats read are "
            f"{', '.join(KNOWN_EXTENSIONS)}"
        )
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise CorpusError(
            f"{file} cannot be read ({exc.strerror or exc}): check that it is a readable file, or remove it"
        ) from None
    if b"\0" in raw:
        raise CorpusError(f"{file} looks binary (it contains NUL bytes): remove it or narrow the glob")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"{file} is not valid UTF-8 (byte {exc.start}): re-save it as UTF-8 or remove it"
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    text = fmt.read(text)
    if not text.strip():
        what = "is empty" if fmt.verbatim else f"is empty: it has no readable text once read as {fmt.name}"
        raise CorpusError(f"{file} {what}: add content or remove the file")
    return text
