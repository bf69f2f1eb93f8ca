"""The vocabulary of the evaluation: documents, spans, chunks and the IDs that name them,
and the records the layers pass on and core/tables.py stores: a retrieved chunk, a query's trace, a rejection.

Offsets are Python ``str`` (code point) offsets into the document text as loaded (UTF-8 decoded,
newlines untouched); ``start`` is inclusive and ``end`` exclusive, so ``text[start:end]`` is the span.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NewType

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


RewriteStatus = Literal["off", "rewritten", "unchanged", "failed"]


FoundBy = Literal["knn", "bm25", "both"]


@dataclass(frozen=True)
class RetrievedChunk:
    """One chunk of a question's result list. ``score`` is what ranked it: the cosine similarity for
    dense-only profiles, the BM25 score for keyword-only ones, the RRF score for fused ones, and the
    reranker's score when a reranker ran. The retriever ranks (1-based) and scores are kept as found,
    None where that retriever did not return the chunk."""

    question_id: QuestionId
    rank: int  # 1-based
    chunk_id: ChunkId
    doc_id: DocumentId
    start: int
    end: int
    score: float
    text: str
    found_by: FoundBy = "knn"
    knn_rank: int | None = None
    knn_score: float | None = None
    bm25_rank: int | None = None
    bm25_score: float | None = None
    fused_score: float | None = None
    rerank_score: float | None = None


@dataclass(frozen=True)
class QueryTrace:
    """How one question was retrieved: what was searched for and how many candidates each side had.
    ``knn_below_threshold`` counts dense hits the similarity threshold removed.

    ``search_ms`` is the question's search latency: the wall time of its dense search, keyword search,
    fusion and reranking, each run for this question alone, as an application serving one user does.
    The query's embedding and its rewrite are not in it: both come from caches on a re-run, so including
    them would make the same setup fast one night and slow the next; the rewrite's cost is in its tokens
    (``rewrite_prompt_tokens``, ``rewrite_completion_tokens``: what the reply cost when it was made, also
    when it now comes from the response cache)."""

    question_id: QuestionId
    query: str
    rewrite_status: RewriteStatus = "off"
    rewrite_error: str = ""
    knn_candidates: int = 0
    knn_below_threshold: int = 0
    bm25_candidates: int = 0
    search_ms: float = 0.0
    rewrite_prompt_tokens: int = 0
    rewrite_completion_tokens: int = 0


RejectionReason = Literal[
    "llm_failed",  # the LLM call failed after its retries
    "invalid_reply",  # malformed or schema-invalid JSON, still after the repair prompt
    "excerpt_not_found",  # a quoted excerpt does not occur in the document, even normalised
    "sparse_chunk",  # chunk-level: the chunk was classified SPARSE, so no question was asked
    "duplicate",  # semantically a repeat of an earlier question
    "too_few_terms",  # the offline generators: the source holds too few content terms to ask with
    "unretrievable",  # the retrievability filter (off by default): its retriever cannot find the source
]


@dataclass(frozen=True)
class Rejection:
    reason: RejectionReason
    detail: str  # human-readable: which excerpt, which validation error, similarity to which question
    source_doc_ids: tuple[str, ...]
    question: str | None = None
    source_chunk_ids: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
