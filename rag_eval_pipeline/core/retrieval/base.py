"""What retrieval produces: ranked chunks per question, each saying which retrievers found it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..embedding.cache import EmbeddingCounts
from ..types import ChunkId, DocumentId, QuestionId
from .rewrite import RewriteStatus

FoundBy = Literal["knn", "bm25", "both"]


@dataclass(frozen=True)
class Query:
    question_id: QuestionId
    text: str


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
