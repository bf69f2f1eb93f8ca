"""What retrieval produces: ranked chunks per question, each saying which retrievers found it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..embedding.cache import EmbeddingCounts
from ..types import QueryTrace, QuestionId, RetrievedChunk


@dataclass(frozen=True)
class Query:
    question_id: QuestionId
    text: str


@dataclass(frozen=True)
class RetrievalRun:
    """Step 3 of an evaluation: the hits and traces per question, and what the run cost and used, so a
    caller reports them without recomputing."""

    hits: dict[QuestionId, list[RetrievedChunk]]
    traces: dict[QuestionId, QueryTrace]
    # Wall time per stage (rewrite, embed, knn, bm25, fusion, rerank), for metadata and benchmarks.
    seconds: dict[str, float] = field(default_factory=dict)
    query_embedding: EmbeddingCounts = field(default_factory=EmbeddingCounts)
    reranker: str = ""  # model id of the reranker that ran, '' when none did
    rewriter: str = ""  # model id of the query rewriter that ran, '' when none did
