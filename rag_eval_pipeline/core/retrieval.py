"""Dense retrieval: index a chunk set once, then fetch the top k chunks for every question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .embedding.base import Embedder
from .progress import Progress, no_progress
from .types import ChunkId, DocumentId, PositionAwareChunk, QuestionId
from .vector_store.base import ScoredChunk, VectorStore

SEARCH_BATCH = 64


@dataclass(frozen=True)
class Query:
    question_id: QuestionId
    text: str


@dataclass(frozen=True)
class RetrievedChunk:
    question_id: QuestionId
    rank: int  # 1-based
    chunk_id: ChunkId
    doc_id: DocumentId
    start: int
    end: int
    score: float
    text: str


@runtime_checkable
class Reranker(Protocol):
    """Re-orders the dense candidates of one query; ``depth`` candidates are fetched for it."""

    @property
    def depth(self) -> int: ...

    def rerank(self, query: str, candidates: Sequence[ScoredChunk]) -> list[ScoredChunk]: ...


def index_chunks(
    chunks: Sequence[PositionAwareChunk],
    embedder: Embedder,
    store: VectorStore,
    collection: str,
    chunk_config: str,
) -> int:
    """Embed (through whatever cache the embedder has) and make the collection hold exactly ``chunks``."""
    vectors = embedder.embed([c.text for c in chunks])
    store.replace_collection(collection, chunks, vectors, chunk_config)
    return len(chunks)


def retrieve(
    queries: Sequence[Query],
    embedder: Embedder,
    store: VectorStore,
    collection: str,
    k: int,
    reranker: Reranker | None = None,
    progress: Progress = no_progress,
) -> dict[QuestionId, list[RetrievedChunk]]:
    """Top ``k`` chunks per question, ranked best first; ties broken by chunk id (deterministic)."""
    if k <= 0:
        raise ValueError(f"k must be >= 1 (the number of chunks to retrieve), got {k}")
    depth = max(k, reranker.depth) if reranker is not None else k
    vectors = embedder.embed([q.text for q in queries])
    results: dict[QuestionId, list[RetrievedChunk]] = {}
    stage = f"retrieval from {collection}"
    progress(stage, 0, len(queries))
    with store.session(collection):  # one open of a local collection for all batches
        for i in range(0, len(queries), SEARCH_BATCH):
            batch = queries[i : i + SEARCH_BATCH]
            hits_per_query = store.search(collection, vectors[i : i + SEARCH_BATCH], depth)
            for query, hits in zip(batch, hits_per_query, strict=True):
                ranked = reranker.rerank(query.text, hits) if reranker is not None else hits
                results[query.question_id] = [
                    RetrievedChunk(
                        query.question_id, rank, h.chunk_id, h.doc_id, h.start, h.end, h.score, h.text
                    )
                    for rank, h in enumerate(ranked[:k], start=1)
                ]
            progress(stage, min(i + SEARCH_BATCH, len(queries)), len(queries))
    return results
