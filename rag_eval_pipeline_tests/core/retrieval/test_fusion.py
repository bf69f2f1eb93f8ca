from dataclasses import replace

import pytest

from rag_eval_pipeline.core.retrieval.fusion import RankedList, weighted_rrf
from rag_eval_pipeline.core.types import ChunkId, DocumentId
from rag_eval_pipeline.core.vector_store.base import ScoredChunk


def hit(cid: str, score: float) -> ScoredChunk:
    return ScoredChunk(ChunkId(cid), DocumentId("d"), 0, 1, score, "x")


def test_weighted_rrf_follows_the_formula_and_keeps_each_retrievers_rank_and_score():
    knn = RankedList("knn", 0.6, [hit("a", 0.9), hit("b", 0.8), hit("c", 0.7)])
    bm25 = RankedList("bm25", 0.4, [hit("c", 12.0), hit("d", 9.0)])
    fused = weighted_rrf([knn, bm25], rrf_k=60)
    expected = {
        "a": 0.6 / 61,
        "b": 0.6 / 62,
        "c": 0.6 / 63 + 0.4 / 61,
        "d": 0.4 / 62,
    }
    assert [f.chunk.chunk_id for f in fused] == sorted(expected, key=lambda c: -expected[c])
    for f in fused:
        assert f.score == pytest.approx(expected[f.chunk.chunk_id])
    c = next(f for f in fused if f.chunk.chunk_id == "c")
    assert dict(c.ranks) == {"knn": 3, "bm25": 1} and dict(c.scores) == {"knn": 0.7, "bm25": 12.0}
    d = next(f for f in fused if f.chunk.chunk_id == "d")
    assert dict(d.ranks) == {"bm25": 2}


def test_ties_go_in_document_order_whatever_the_input_order():
    # equal weights, mirrored ranks: x and y tie exactly; y comes first in the document
    x, y = replace(hit("x", 1), start=50, end=60), replace(hit("y", 1), start=5, end=9)
    one = weighted_rrf([RankedList("knn", 1, [y, x]), RankedList("bm25", 1, [x, y])], 60)
    two = weighted_rrf([RankedList("bm25", 1, [x, y]), RankedList("knn", 1, [y, x])], 60)
    assert [f.chunk.chunk_id for f in one] == [f.chunk.chunk_id for f in two] == ["y", "x"]
    in_b = replace(hit("a", 1), doc_id=DocumentId("b.md"))
    in_a = replace(hit("b", 1), doc_id=DocumentId("a.md"), start=900)
    fused = weighted_rrf([RankedList("knn", 1, [in_b, in_a]), RankedList("bm25", 1, [in_a, in_b])], 60)
    assert [f.chunk.chunk_id for f in fused] == ["b", "a"]  # the earlier document first


def test_rrf_k_shifts_the_balance_between_top_ranks_and_agreement():
    knn = RankedList("knn", 1, [hit("solo", 1), hit("p", 1), hit("q", 1), hit("shared", 1)])
    bm25 = RankedList("bm25", 1, [hit("r", 1), hit("s", 1), hit("t", 1), hit("shared", 1)])
    # small k: being first for one retriever wins; large k: being found by both wins
    assert weighted_rrf([knn, bm25], rrf_k=0)[0].chunk.chunk_id == "r"
    assert weighted_rrf([knn, bm25], rrf_k=60)[0].chunk.chunk_id == "shared"


def test_empty_lists_fuse_to_nothing_and_a_repeated_chunk_counts_once():
    assert weighted_rrf([RankedList("knn", 1, []), RankedList("bm25", 1, [])], 60) == []
    (only,) = weighted_rrf([RankedList("knn", 1, [hit("a", 0.5), hit("a", 0.4)])], 60)
    assert only.score == pytest.approx(1 / 61) and dict(only.ranks) == {"knn": 1}
