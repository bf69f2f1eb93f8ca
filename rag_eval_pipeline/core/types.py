"""The vocabulary of the evaluation: documents, spans, chunks and the IDs that name them.

Offsets are Python ``str`` (code point) offsets into the document text as loaded (UTF-8 decoded,
newlines untouched); ``start`` is inclusive and ``end`` exclusive, so ``text[start:end]`` is the span.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, NewType

DocumentId = NewType("DocumentId", str)
ChunkId = NewType("ChunkId", str)
QuestionId = NewType("QuestionId", str)
ChunkConfigName = NewType("ChunkConfigName", str)
ProfileName = NewType("ProfileName", str)

EvaluationType = Literal["chunk-level", "token-level"]
EVALUATION_TYPES: tuple[EvaluationType, ...] = ("chunk-level", "token-level")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    doc_id: DocumentId
    text: str
    # The first folder under the corpus root, used for per-group breakdowns ("" at the root).
    group: str = ""

    @cached_property
    def sha256(self) -> str:
        return sha256_hex(self.text)


@dataclass(frozen=True, order=True)
class CharacterSpan:
    doc_id: DocumentId
    start: int
    end: int
    text: str = field(compare=False)

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"span {self.doc_id}[{self.start}:{self.end}] needs 0 <= start <= end")
        if len(self.text) != self.end - self.start:
            raise ValueError(
                f"span {self.doc_id}[{self.start}:{self.end}] has {len(self.text)} characters of "
                f"text, expected {self.end - self.start}"
            )

    def __len__(self) -> int:
        return self.end - self.start

    def overlaps(self, other: CharacterSpan) -> bool:
        """True when both spans share at least one character (touching spans do not overlap)."""
        return self.doc_id == other.doc_id and max(self.start, other.start) < min(self.end, other.end)


def make_chunk_id(prefix: Literal["chunk_", "pa_chunk_"], doc_id: str, text: str, occurrence: int) -> ChunkId:
    """``prefix`` + sha256[:12] of the chunk's document and content.

    Identical text is one chunk within a document unless it repeats: the first occurrence of a text in
    a document hashes ``doc_id NUL text``; the n-th repeat (n >= 1, counted left to right within the
    same document and chunk set) hashes ``doc_id NUL text NUL n``. IDs are thus unique in a chunk set,
    stable across re-runs, and independent of other documents.
    """
    material = f"{doc_id}\0{text}" if occurrence == 0 else f"{doc_id}\0{text}\0{occurrence}"
    return ChunkId(prefix + sha256_hex(material)[:12])


@dataclass(frozen=True)
class Chunk:
    """A chunk known only by its text (what a third-party chunker returns)."""

    chunk_id: ChunkId
    doc_id: DocumentId
    text: str


@dataclass(frozen=True)
class PositionAwareChunk:
    """A chunk that knows where it was cut: ``document.text[start:end] == text``."""

    chunk_id: ChunkId
    doc_id: DocumentId
    start: int
    end: int
    text: str

    def __post_init__(self) -> None:
        if len(self.text) != self.end - self.start or self.start < 0:
            raise ValueError(
                f"chunk {self.chunk_id} at {self.doc_id}[{self.start}:{self.end}] has "
                f"{len(self.text)} characters of text"
            )

    @property
    def span(self) -> CharacterSpan:
        return CharacterSpan(self.doc_id, self.start, self.end, self.text)


def assign_chunk_ids(
    prefix: Literal["chunk_", "pa_chunk_"], doc_id: DocumentId, texts: list[str]
) -> list[ChunkId]:
    """IDs for the chunks of one document in cut order (see ``make_chunk_id``)."""
    seen: dict[str, int] = {}
    ids = []
    for text in texts:
        occurrence = seen.get(text, 0)
        seen[text] = occurrence + 1
        ids.append(make_chunk_id(prefix, doc_id, text, occurrence))
    return ids
