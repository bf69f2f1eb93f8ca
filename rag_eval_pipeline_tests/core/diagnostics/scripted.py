"""Retrieval sides whose answers a test writes by hand, so a loss is known by design: the real
``ProfileRetriever`` (fusion, threshold, rerank, top_k) runs over them and reports its stage lists."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rag_eval_pipeline.core.embedding.base import Vectors
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import DenseIndex
from rag_eval_pipeline.core.retrieval.profile_retriever import ProfileRetriever
from rag_eval_pipeline.core.retrieval.stages import StageLists
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.types import ChunkId, DocumentId, PositionAwareChunk, QuestionId
from rag_eval_pipeline.core.vector_store.base import ScoredChunk
from rag_eval_pipeline_tests.fakes import HashingEmbedder

QUESTION = QuestionId("q")


def chunk(name: str, start: int, end: int, doc: str = "d") -> PositionAwareChunk:
    """A chunk whose text starts with its name (so a reranker can tell chunks apart)."""
    return PositionAwareChunk(
        ChunkId(name), DocumentId(doc), start, end, (name + "." * (end - start))[: end - start]
    )


def scored(c: PositionAwareChunk, score: float) -> ScoredChunk:
    return ScoredChunk(c.chunk_id, c.doc_id, c.start, c.end, score, c.text)


class ScriptedStore:
    """A vector store whose one collection answers every query with the same list."""

    location = "scripted"

    def __init__(self, hits: Sequence[ScoredChunk]) -> None:
        self.hits = list(hits)

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        return [self.hits[:k] for _ in range(len(queries))]

    def replace_collection(self, *args: object, **kwargs: object) -> int:
        raise NotImplementedError

    def fingerprint(self, name: str) -> str | None:
        return None

    def count(self, name: str) -> int:
        return len(self.hits)

    @contextmanager
    def session(self, name: str) -> Iterator[None]:
        yield

    def collection_exists(self, name: str) -> bool:
        return True


class ScriptedKeyword:
    def __init__(self, hits: Sequence[ScoredChunk]) -> None:
        self.hits = list(hits)

    def search(self, queries: Sequence[str], k: int) -> list[list[ScoredChunk]]:
        return [self.hits[:k] for _ in queries]


class ScriptedReranker:
    model_id = "scripted-reranker"

    def __init__(self, scores: dict[PositionAwareChunk, float]) -> None:
        self.scores = {c.text: s for c, s in scores.items()}

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [self.scores.get(p, 0.0) for p in passages]


def stage_lists(
    profile: RetrievalProfile,
    dense: Sequence[ScoredChunk] = (),
    keyword: Sequence[ScoredChunk] = (),
    reranker: ScriptedReranker | None = None,
) -> StageLists:
    """What each stage of ``profile`` returns when the dense side answers ``dense`` and BM25 ``keyword``."""
    found: list[StageLists] = []
    retriever = ProfileRetriever(
        profile,
        dense=DenseIndex(HashingEmbedder(), ScriptedStore(dense), "c")
        if "knn" in profile.retrievers
        else None,
        keyword=ScriptedKeyword(keyword) if "bm25" in profile.retrievers else None,
        reranker=reranker,
        observer=found.append,
    )
    retriever.run([Query(QUESTION, "question")])
    (lists,) = found
    return lists
