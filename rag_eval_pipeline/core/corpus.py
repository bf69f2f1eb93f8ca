"""Loading a folder of documents into a Corpus, refusing files that would give wrong offsets and
symbolic links that lead out of the folder.

A link whose target lies outside the corpus folder is refused, never followed or skipped: what it
points at (``/etc/passwd``, a private note) would otherwise go into chunks, vector payloads, LLM prompts
and LangSmith. A link that stays inside the folder, and a corpus folder that is itself a link, are fine.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .errors import CorpusError
from .types import Document, DocumentId


@dataclass(frozen=True)
class Corpus:
    documents: tuple[Document, ...]
    root: str = ""
    _by_id: Mapping[DocumentId, Document] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id: dict[DocumentId, Document] = {}
        for doc in self.documents:
            if doc.doc_id in by_id:
                raise CorpusError(f"document id {doc.doc_id!r} occurs twice in the corpus")
            by_id[doc.doc_id] = doc
        object.__setattr__(self, "_by_id", by_id)

    @classmethod
    def from_folder(cls, path: str | Path, glob: str = "**/*.md") -> Corpus:
        """Every file under ``path`` matching ``glob``; doc id = path relative to ``path``, POSIX style."""
        root = Path(path)
        if not root.is_dir():
            raise CorpusError(f"corpus folder {root} does not exist or is not a folder")
        files = corpus_files(root, glob)
        if not files:
            raise CorpusError(f"no file in {root} matches {glob!r}: add documents or change the glob")
        documents = []
        for file in files:
            rel = file.relative_to(root).as_posix()
            documents.append(
                Document(DocumentId(rel), read_document_text(file), rel.split("/")[0] if "/" in rel else "")
            )
        return cls(tuple(documents), root=str(root))

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

    @cached_property
    def sha256(self) -> str:
        """Hash of every (doc id, content hash): two runs on the same corpus share it."""
        digest = hashlib.sha256()
        for doc in sorted(self.documents, key=lambda d: d.doc_id):
            digest.update(f"{doc.doc_id}\0{doc.sha256}\n".encode())
        return digest.hexdigest()


def corpus_files(root: Path, glob: str) -> list[Path]:
    """The files under ``root`` matching ``glob``, sorted, as ``Corpus.from_folder`` and the document
    sensor's scan see them; a CorpusError names a symbolic link whose target is outside ``root``."""
    base = Path(os.path.realpath(root))
    files = []
    for file in sorted(p for p in root.glob(glob) if p.is_file()):
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
    return files


def _first_link(root: Path, file: Path) -> Path:
    """The link that leads out: ``file`` itself or the first linked folder on the way to it."""
    current = root
    for part in file.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return current
    return file


def read_document_text(file: Path) -> str:
    """Decode UTF-8 with newlines untouched (a leading BOM is dropped): offsets index this text."""
    raw = file.read_bytes()
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
    if not text.strip():
        raise CorpusError(f"{file} is empty: add content or remove the file")
    return text
