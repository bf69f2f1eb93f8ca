"""Loading a folder of documents into a Corpus, refusing files that would give wrong offsets."""

from __future__ import annotations

import hashlib
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
        files = sorted(p for p in root.glob(glob) if p.is_file())
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
