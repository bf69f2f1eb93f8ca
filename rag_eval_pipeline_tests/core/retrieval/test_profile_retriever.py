"""Profiles run end to end on the tiny corpus: real MiniLM, real local Qdrant, real bm25s."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker, cut_corpus
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache, EmbeddingCounts
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import ChunkIndexes, DenseIndex, build_indexes
from rag_eval_pipeline.core.retrieval.keyword import KeywordIndex
from rag_eval_pipeline.core.retrieval.profile_retriever import ProfileRetriever, retrieve
from rag_eval_pipeline.core.retrieval.rewrite import RewrittenQuery
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.types import PositionAwareChunk, QueryTrace, QuestionId, RetrievedChunk
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
from rag_eval_pipeline_tests.conftest import TINY_QUESTIONS, tiny_corpus
from rag_eval_pipeline_tests.fakes import HashingEmbedder

QUERIES = [Query(QuestionId(qid), text) for qid, text, _ in TINY_QUESTIONS]


def profile(**fields: Any) -> RetrievalProfile:
    return RetrievalProfile(**{"name": "p", "top_k": 3, **fields})


@pytest.fixture(scope="module")
def sides(
    minilm: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[DenseIndex, KeywordIndex, list[PositionAwareChunk]]:
    cut = cut_corpus(FixedSizeChunker(60, 0), tiny_corpus(), "f")  # type: ignore[arg-type]
    indexes = build_indexes(
        cut, minilm, QdrantVectorStore(path=tmp_path_factory.mktemp("qdrant")), collection="tiny"
    )
    assert indexes.dense is not None and indexes.keyword is not None
    return indexes.dense, indexes.keyword, list(cut.chunks)


def run(sides: Any, p: RetrievalProfile, **kwargs: Any) -> Any:
    dense, keyword, _ = sides
    return ProfileRetriever(p, dense=dense, keyword=keyword, **kwargs).run(QUERIES)


def test_dense_only_is_the_vector_store_ranking(sides: Any):
    dense, _, _ = sides
    result = run(sides, profile())
    vectors = dense.embedder.embed([q.text for q in QUERIES])
    expected = dense.store.search("tiny", vectors, 3)
    for query, hits in zip(QUERIES, expected, strict=True):
        got = result.hits[query.question_id]
        assert [h.chunk_id for h in got] == [h.chunk_id for h in hits]
        assert all(r.found_by == "knn" and r.knn_rank == r.rank and r.bm25_rank is None for r in got)
        assert [r.score for r in got] == [r.knn_score for r in got] == [h.score for h in hits]
        assert all(r.fused_score is None and r.rerank_score is None for r in got)


def test_keyword_only_is_the_bm25_ranking(sides: Any):
    _, keyword, _ = sides
    result = run(sides, profile(vector_weight=0, keyword_weight=1))
    expected = keyword.search([q.text for q in QUERIES], 3)
    for query, hits in zip(QUERIES, expected, strict=True):
        got = result.hits[query.question_id]
        assert [(h.chunk_id, h.score) for h in got] == [(h.chunk_id, h.score) for h in hits]
        assert all(r.found_by == "bm25" and r.bm25_rank == r.rank and r.knn_rank is None for r in got)
    assert "knn" not in result.seconds and result.seconds["bm25"] > 0


def test_hybrid_scores_are_weighted_rrf_of_the_recorded_ranks(sides: Any):
    p = profile(vector_weight=0.6, keyword_weight=0.4, rrf_k=60)
    result = run(sides, p)
    found = {"knn": 0, "bm25": 0, "both": 0}
    for query in QUERIES:
        rows: list[RetrievedChunk] = result.hits[query.question_id]
        assert len(rows) == 3 and [r.rank for r in rows] == [1, 2, 3]
        for r in rows:
            expected = (0.6 / (60 + r.knn_rank) if r.knn_rank else 0.0) + (
                0.4 / (60 + r.bm25_rank) if r.bm25_rank else 0.0
            )
            assert r.score == pytest.approx(expected) and r.fused_score == r.score
            assert (
                r.found_by
                == {(True, True): "both", (True, False): "knn", (False, True): "bm25"}[
                    (r.knn_rank is not None, r.bm25_rank is not None)
                ]
            )
            found[r.found_by] += 1
        assert [r.score for r in rows] == sorted((r.score for r in rows), reverse=True)
        trace = result.traces[query.question_id]
        # each side gives up to 20 candidates (the tiny corpus has fewer chunks)
        assert trace.knn_candidates == min(20, len(sides[2])) and trace.bm25_candidates > 0
    assert found["both"] > 0
    assert run(sides, p).hits == result.hits  # deterministic
    assert {"embed", "knn", "bm25", "fusion"} <= set(result.seconds)


def test_similarity_threshold_filters_the_dense_side_only(sides: Any):
    strict = run(sides, profile(similarity_threshold=0.99))
    assert all(not hits for hits in strict.hits.values())
    assert all(t.knn_below_threshold == t.knn_candidates == 3 for t in strict.traces.values())
    hybrid = run(sides, profile(similarity_threshold=0.99, keyword_weight=1))
    assert all(hits and all(r.found_by == "bm25" for r in hits) for hits in hybrid.hits.values())
    loose = run(sides, profile(similarity_threshold=0.3))
    dense = run(sides, profile())
    for qid, hits in loose.hits.items():
        assert all(r.score >= 0.3 for r in hits)
        assert [r.chunk_id for r in hits] == [r.chunk_id for r in dense.hits[qid] if r.score >= 0.3]
        trace = loose.traces[qid]
        assert trace.knn_below_threshold == sum(1 for r in dense.hits[qid] if r.score < 0.3)


class ScriptedReranker:
    """Scores a passage by its length (deterministic, unlike any retriever); records what it was given."""

    model_id = "scripted:length"

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((query, len(passages)))
        return [float(len(p) % 7) for p in passages]


class ScriptedRewriter:
    model_id = "scripted:upper"

    def rewrite(self, queries: Sequence[str], progress: Any = None) -> list[RewrittenQuery]:
        return [RewrittenQuery(q, q.upper(), "rewritten") for q in queries]


def test_reranker_reorders_the_top_rerank_depth_of_the_original_question(sides: Any):
    reranker = ScriptedReranker()
    p = profile(vector_weight=0.6, keyword_weight=0.4, reranker="scripted", rerank_depth=6)
    result = run(sides, p, reranker=reranker, rewriter=ScriptedRewriter())
    plain = run(sides, profile(vector_weight=0.6, keyword_weight=0.4, rerank_depth=6))
    # the query the reranker saw is the user's question, not the (upper-cased) rewrite
    assert [c[0] for c in reranker.calls] == [q.text for q in QUERIES]
    assert all(n == 6 for _, n in reranker.calls)
    for query in QUERIES:
        rows = result.hits[query.question_id]
        pool = {r.chunk_id for r in plain_pool(sides, query)}
        assert {r.chunk_id for r in rows} <= pool
        keys = [(-(r.rerank_score or 0.0), r.chunk_id) for r in rows]
        assert keys == sorted(keys) and all(r.score == r.rerank_score for r in rows)
        assert all(r.rerank_score == float(len(r.text) % 7) for r in rows)
        assert all(r.fused_score is not None for r in rows)
    assert result.hits != plain.hits
    assert "rerank" in result.seconds


def plain_pool(sides: Any, query: Query) -> list[RetrievedChunk]:
    """The fused top 6 without reranking: what the reranker chooses from."""
    dense, keyword, _ = sides
    p = profile(vector_weight=0.6, keyword_weight=0.4, top_k=6)
    return ProfileRetriever(p, dense=dense, keyword=keyword).run([query]).hits[query.question_id]


def test_rewritten_queries_are_what_the_retrievers_search(sides: Any):
    p = profile(query_rewrite_enabled=True, vector_weight=0, keyword_weight=1)
    result = run(sides, p, rewriter=ScriptedRewriter())
    for query in QUERIES:
        trace = result.traces[query.question_id]
        assert trace.query == query.text.upper() and trace.rewrite_status == "rewritten"
    off = run(sides, profile(vector_weight=0, keyword_weight=1), rewriter=ScriptedRewriter())
    assert all(
        t.rewrite_status == "off" and t.query == q.text
        for q, t in zip(QUERIES, off.traces.values(), strict=True)
    )


def untimed(traces: dict[QuestionId, QueryTrace]) -> dict[QuestionId, QueryTrace]:
    """The traces without their latencies, which differ from run to run."""
    return {qid: replace(t, search_ms=0.0) for qid, t in traces.items()}


class SlowReranker(ScriptedReranker):
    """The scripted reranker, taking ``seconds`` for one question's passages."""

    def __init__(self, slow_query: str, seconds: float) -> None:
        super().__init__()
        self.slow_query, self.seconds = slow_query, seconds

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if query == self.slow_query:
            time.sleep(self.seconds)
        return super().score(query, passages)


def test_each_question_has_its_own_search_latency(sides: Any):
    """A question's search_ms is its own dense and keyword search, fusion and reranking: a reranker
    slow on one question makes that question slow, not the others."""
    slow = QUERIES[1]
    p = profile(vector_weight=0.6, keyword_weight=0.4, reranker="scripted")
    result = run(sides, p, reranker=SlowReranker(slow.text, 0.25))
    latency = {qid: t.search_ms for qid, t in result.traces.items()}
    assert latency[slow.question_id] >= 250
    assert all(0 < ms < 250 for qid, ms in latency.items() if qid != slow.question_id)
    # the stages' totals still add every question's time
    assert result.seconds["rerank"] >= 0.25


def test_missing_pieces_are_named(sides: Any):
    dense, keyword, _ = sides
    with pytest.raises(ConfigError, match="keyword_weight > 0 but no keyword index"):
        ProfileRetriever(profile(keyword_weight=1), dense=dense)
    with pytest.raises(ConfigError, match="vector_weight > 0 but no dense index"):
        ProfileRetriever(profile(), keyword=keyword)
    with pytest.raises(ConfigError, match="reranks with ce but no reranker"):
        ProfileRetriever(profile(reranker="ce"), dense=dense)
    with pytest.raises(ConfigError, match="rewrites queries but no query rewriter"):
        ProfileRetriever(profile(query_rewrite_enabled=True), dense=dense)


def test_retrieve_runs_the_profile_on_the_indexes_and_names_what_ran(sides: Any):
    dense, keyword, _ = sides
    indexes = ChunkIndexes(dense, keyword)
    p = profile(vector_weight=0.6, keyword_weight=0.4, reranker="scripted", query_rewrite_enabled=True)
    got = retrieve(p, indexes, QUERIES, reranker=ScriptedReranker(), rewriter=ScriptedRewriter())
    expected = run(sides, p, reranker=ScriptedReranker(), rewriter=ScriptedRewriter())
    assert got.hits == expected.hits and untimed(got.traces) == untimed(expected.traces)
    assert (got.reranker, got.rewriter) == ("scripted:length", "scripted:upper")
    # given, but the profile neither reranks nor rewrites: neither ran, and the run says so
    plain = retrieve(profile(), indexes, QUERIES, reranker=ScriptedReranker(), rewriter=ScriptedRewriter())
    assert (plain.reranker, plain.rewriter) == ("", "")
    assert plain.hits == run(sides, profile()).hits


def test_a_run_counts_only_its_own_query_embeddings(tmp_path: Path):
    embedder = CachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "embeddings.sqlite"))
    cut = cut_corpus(FixedSizeChunker(60, 0), tiny_corpus(), "f")  # type: ignore[arg-type]
    indexes = build_indexes(cut, embedder, QdrantVectorStore(path=tmp_path / "q"))  # embeds the chunks
    first = retrieve(profile(), indexes, QUERIES)
    again = retrieve(profile(), indexes, QUERIES)
    keyword_only = retrieve(profile(vector_weight=0, keyword_weight=1), indexes, QUERIES)
    assert first.query_embedding == EmbeddingCounts(texts_embedded=len(QUERIES), cache_hits=0)
    assert again.query_embedding == EmbeddingCounts(texts_embedded=0, cache_hits=len(QUERIES))
    assert keyword_only.query_embedding == EmbeddingCounts()
    assert again.hits == first.hits
