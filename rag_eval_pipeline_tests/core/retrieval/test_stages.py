"""The observer of ProfileRetriever sees what each stage returned, and what it returned is the run's."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker, cut_corpus
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.fusion import RankedList, weighted_rrf
from rag_eval_pipeline.core.retrieval.indexes import ChunkIndexes, build_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.retrieval.stages import StageLists
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.types import QuestionId
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline_tests.conftest import TINY_QUESTIONS, tiny_corpus

QUERIES = [Query(QuestionId(qid), text) for qid, text, _ in TINY_QUESTIONS]


@pytest.fixture(scope="module")
def indexes(minilm: Any, tmp_path_factory: pytest.TempPathFactory) -> ChunkIndexes:
    cut = cut_corpus(FixedSizeChunker(60, 0), tiny_corpus(), "f")  # type: ignore[arg-type]
    return build_indexes(cut, minilm, EdgeVectorStore(tmp_path_factory.mktemp("qdrant")), collection="tiny")


class LengthReranker:
    model_id = "length"

    def score(self, query: str, passages: Any) -> list[float]:
        return [float(len(p)) for p in passages]


def observed(
    indexes: ChunkIndexes, profile: RetrievalProfile, **kwargs: Any
) -> tuple[Any, dict[str, StageLists]]:
    seen: dict[str, StageLists] = {}
    run = retrieve(profile, indexes, QUERIES, observer=lambda s: seen.__setitem__(s.question_id, s), **kwargs)
    return run, seen


def test_the_observer_sees_every_stage_and_the_returned_top_k(indexes: ChunkIndexes):
    profile = RetrievalProfile(
        "hybrid", top_k=3, vector_weight=0.6, keyword_weight=0.4, similarity_threshold=0.25
    )
    run, seen = observed(indexes, profile)
    assert set(seen) == {q.question_id for q in QUERIES}
    assert indexes.dense is not None and indexes.keyword is not None
    for query in QUERIES:
        stages = seen[query.question_id]
        assert stages.final == tuple(run.hits[query.question_id]) and stages.query == query.text
        # the dense side as searched: kept above the threshold, the rest below, in search order
        (raw,) = indexes.dense.store.search(
            "tiny", indexes.dense.embedder.embed([query.text]), profile.candidate_depth
        )
        assert stages.dense is not None
        searched = stages.dense + stages.dense_below_threshold  # (the query alone: the last bits differ)
        assert [h.chunk_id for h in searched] == [h.chunk_id for h in raw]
        assert [h.score for h in searched] == pytest.approx([h.score for h in raw], abs=1e-6)
        assert all(h.score >= 0.25 for h in stages.dense) and all(
            h.score < 0.25 for h in stages.dense_below_threshold
        )
        assert stages.keyword == tuple(indexes.keyword.search([query.text], profile.candidate_depth)[0])
        # fused: every candidate, by weighted RRF; the top k of it is what the run returned
        expected = weighted_rrf(
            [RankedList("knn", 0.6, stages.dense), RankedList("bm25", 0.4, stages.keyword)], profile.rrf_k
        )
        assert list(stages.fused) == expected and stages.reranked is None
        assert [h.chunk.chunk_id for h in stages.ranking[:3]] == [h.chunk_id for h in stages.final]
        assert run.traces[query.question_id].knn_below_threshold == len(stages.dense_below_threshold)


def test_with_a_reranker_the_ranking_is_the_reranked_pool_then_the_rest(indexes: ChunkIndexes):
    profile = RetrievalProfile(
        "reranked", top_k=2, vector_weight=0.6, keyword_weight=0.4, reranker="len", rerank_depth=4
    )
    run, seen = observed(indexes, profile, reranker=LengthReranker())
    for query in QUERIES:
        stages = seen[query.question_id]
        assert stages.reranked is not None and len(stages.reranked) == len(stages.rerank_scores) == 4
        assert {h.chunk.chunk_id for h in stages.reranked} == {h.chunk.chunk_id for h in stages.fused[:4]}
        assert list(stages.rerank_scores) == sorted(stages.rerank_scores, reverse=True)
        assert [h.chunk.chunk_id for h in stages.ranking] == [h.chunk.chunk_id for h in stages.reranked] + [
            h.chunk.chunk_id for h in stages.fused[4:]
        ]
        assert [h.chunk_id for h in run.hits[query.question_id]] == [
            h.chunk.chunk_id for h in stages.ranking[:2]
        ]
        assert [h.rerank_score for h in run.hits[query.question_id]] == list(stages.rerank_scores[:2])


def test_a_run_without_an_observer_returns_the_same(indexes: ChunkIndexes):
    profile = RetrievalProfile("dense", top_k=2)
    assert retrieve(profile, indexes, QUERIES).hits == observed(indexes, profile)[0].hits
