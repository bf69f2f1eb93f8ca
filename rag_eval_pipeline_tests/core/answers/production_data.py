"""Hand-made retrieval hits, answers and traces for the production-metric tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rag_eval_pipeline.core.answers.production import ProductionItem
from rag_eval_pipeline.core.answers.types import Answer, Confidence
from rag_eval_pipeline.core.embedding.base import Vectors
from rag_eval_pipeline.core.types import ChunkId, DocumentId, FoundBy, QueryTrace, QuestionId, RetrievedChunk


def hit(
    rank: int,
    text: str = "",
    *,
    chunk: str | None = None,
    doc: str = "d1",
    found_by: FoundBy = "knn",
    knn: float | None = 0.5,
    bm25: float | None = None,
    qid: str = "q1",
) -> RetrievedChunk:
    return RetrievedChunk(
        question_id=QuestionId(qid),
        rank=rank,
        chunk_id=ChunkId(chunk or f"c{rank}"),
        doc_id=DocumentId(doc),
        start=0,
        end=len(text),
        score=knn if knn is not None else (bm25 or 0.0),
        text=text,
        found_by=found_by,
        knn_score=knn,
        bm25_score=bm25,
    )


def answer(
    text: str = "An answer.",
    cited: Sequence[str] = (),
    *,
    confidence: Confidence | None = None,
    abstained: bool = False,
    failed: bool = False,
    qid: str = "q1",
) -> Answer:
    return Answer(
        question_id=QuestionId(qid),
        text=text,
        cited_chunk_ids=tuple(ChunkId(c) for c in cited),
        invalid_citations=(),
        confidence=confidence,
        abstained=abstained,
        answerer="test",
        status="failed" if failed else "ok",
        error="model unreachable" if failed else "",
    )


def trace(qid: str = "q1", *, knn: int = 0, below: int = 0, bm25: int = 0) -> QueryTrace:
    return QueryTrace(
        QuestionId(qid), "query", knn_candidates=knn, knn_below_threshold=below, bm25_candidates=bm25
    )


def item(
    question: str,
    the_answer: Answer,
    hits: Sequence[RetrievedChunk],
    the_trace: QueryTrace | None = None,
) -> ProductionItem:
    qid = the_answer.question_id
    return ProductionItem(qid, question, the_answer, tuple(hits), the_trace or trace(qid))


class TableEmbedder:
    """Vectors looked up in a table (unknown texts get a fixed unrelated vector); counts its calls."""

    def __init__(self, table: Mapping[str, Sequence[float]] | None = None, dimension: int = 3) -> None:
        self.table = dict(table or {})
        self._dimension = dimension
        self.calls: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return "table"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        rows = [self.table.get(t, [0.0] * (self._dimension - 1) + [1.0]) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), self._dimension)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)
