"""Losses known by design, each attributed to the stage that caused it; and, for any retrieval, the
stages' characters partition the missed reference characters exactly."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.diagnostics.attribution import AnswerOutcome, Attribution, attribute
from rag_eval_pipeline.core.diagnostics.coverage import best_cover
from rag_eval_pipeline.core.diagnostics.stages import ANSWER_STAGES, RETRIEVAL_STAGES
from rag_eval_pipeline.core.metrics.span_metrics import span_metrics
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.spans import ChunkSpanIndex, merge_intervals, total_length
from rag_eval_pipeline.core.types import CharacterSpan, ChunkId, DocumentId
from rag_eval_pipeline_tests.core.diagnostics.scripted import ScriptedReranker, chunk, scored, stage_lists


def span(start: int, end: int, doc: str = "d") -> CharacterSpan:
    return CharacterSpan(DocumentId(doc), start, end, "r" * (end - start))


def profile(**fields: Any) -> RetrievalProfile:
    return RetrievalProfile(**{"name": "p", "top_k": 1, **fields})


def lost(result: Attribution) -> dict[str, int]:
    """The stages that lost something."""
    return {s: n for s, n in result.lost.items() if n}


# a document cut in four chunks of 50 characters; the reference lies inside R unless said otherwise
A, B, R, X = chunk("A", 0, 50), chunk("B", 50, 100), chunk("R", 100, 150), chunk("X", 150, 200)
CHUNKS = ChunkSpanIndex([A, B, R, X])
IN_R = [span(110, 140)]  # 30 characters, all in R


def test_a_reference_split_by_a_chunk_boundary_loses_the_smaller_part_to_chunking_at_k1():
    reference = [span(80, 140)]  # 20 characters in B, 40 in R
    got = attribute(
        reference, CHUNKS, stage_lists(profile(), dense=[scored(R, 0.9), scored(B, 0.8)]), profile()
    )
    assert got.retrieved_chars == 40 and lost(got) == {"chunking": 20}
    assert got.best_cover.characters == 40 and got.lost_at == "chunking"
    # the retriever picked the smaller part: chunking still loses the 20 no single chunk can add, the
    # dense side the 20 it could have had more
    worse = attribute(
        reference, CHUNKS, stage_lists(profile(), dense=[scored(B, 0.9), scored(R, 0.8)]), profile()
    )
    assert worse.retrieved_chars == 20 and lost(worse) == {"chunking": 20, "dense_candidates": 20}
    # with room for both chunks nothing is lost
    two = profile(top_k=2)
    both = attribute(reference, CHUNKS, stage_lists(two, dense=[scored(B, 0.9), scored(R, 0.8)]), two)
    assert both.retrieved_chars == 60 and lost(both) == {}


def test_a_chunk_the_dense_side_misses_is_lost_at_dense_candidates_and_bm25_finds_it_for_fusion_to_drop():
    dense, keyword = [scored(A, 0.9)], [scored(R, 7.0), scored(A, 1.0)]
    dense_only = attribute(IN_R, CHUNKS, stage_lists(profile(), dense=dense), profile())
    assert lost(dense_only) == {"dense_candidates": 30} and dense_only.threshold_chars == 0
    keyword_only = profile(vector_weight=0, keyword_weight=1)
    assert (
        attribute(IN_R, CHUNKS, stage_lists(keyword_only, keyword=keyword), keyword_only).retrieved_chars
        == 30
    )
    # hybrid 0.6 / 0.4: R, BM25's first, scores 0.4/61 < A's 0.6/61 + 0.4/62: fusion pushes it below k
    hybrid = profile(vector_weight=0.6, keyword_weight=0.4)
    lists = stage_lists(hybrid, dense=dense, keyword=keyword)
    assert [h.chunk.chunk_id for h in lists.fused] == ["A", "R"]
    fused = attribute(IN_R, CHUNKS, lists, hybrid)
    assert lost(fused) == {"fusion": 30} and fused.lost_at == "fusion"
    trace = {t.chunk_id: t for t in fused.chunks}["R"]
    assert (trace.dense_rank, trace.keyword_rank, trace.fused_rank, trace.lost_at) == (None, 1, 2, "fusion")


def test_a_fused_result_ranked_below_k_by_every_list_is_lost_at_the_top_k_cut():
    hybrid = profile(vector_weight=0.6, keyword_weight=0.4)
    lists = stage_lists(
        hybrid,
        dense=[scored(A, 0.9), scored(B, 0.8), scored(R, 0.7)],
        keyword=[scored(A, 3), scored(B, 2), scored(R, 1)],
    )
    got = attribute(IN_R, CHUNKS, lists, hybrid)
    assert lost(got) == {"top_k": 30}
    assert {t.chunk_id: t.fused_rank for t in got.chunks}["R"] == 3
    # at k = 3 it is returned
    three = replace(hybrid, top_k=3)
    assert (
        attribute(
            IN_R, CHUNKS, stage_lists(three, dense=lists.dense, keyword=lists.keyword), three
        ).missed_chars
        == 0
    )


def test_a_threshold_that_removes_the_right_chunk_is_named():
    strict = profile(top_k=2, similarity_threshold=0.5)
    lists = stage_lists(strict, dense=[scored(A, 0.6), scored(R, 0.45)])
    assert [h.chunk_id for h in lists.dense_below_threshold] == ["R"]
    got = attribute(IN_R, CHUNKS, lists, strict)
    assert lost(got) == {"dense_candidates": 30} and got.threshold_chars == 30
    assert [(s.stage, s.threshold) for s in got.segments] == [("dense_candidates", True)]
    # a chunk never in the search's list is no threshold's doing
    deeper = attribute(IN_R, CHUNKS, stage_lists(strict, dense=[scored(A, 0.6), scored(B, 0.55)]), strict)
    assert lost(deeper) == {"dense_candidates": 30} and deeper.threshold_chars == 0


def test_a_keyword_only_profile_loses_at_keyword_candidates():
    keyword_only = profile(vector_weight=0, keyword_weight=1)
    got = attribute(IN_R, CHUNKS, stage_lists(keyword_only, keyword=[scored(A, 2.0)]), keyword_only)
    assert lost(got) == {"keyword_candidates": 30}


def test_the_reranker_loses_what_it_pushes_below_k_and_fusion_what_never_reached_it():
    reranking = profile(reranker="cross-encoder", rerank_depth=2)
    dense = [scored(R, 0.9), scored(A, 0.8), scored(B, 0.7)]
    pushed = stage_lists(reranking, dense=dense, reranker=ScriptedReranker({A: 1.0, R: 0.1}))
    assert [h.chunk_id for h in pushed.final] == ["A"]
    assert lost(attribute(IN_R, CHUNKS, pushed, reranking)) == {"rerank": 30}
    # fused: R is 3rd, outside the rerank pool of 2
    hybrid = replace(reranking, vector_weight=0.6, keyword_weight=0.4)
    outside = stage_lists(
        hybrid,
        dense=[scored(A, 0.9), scored(B, 0.8), scored(R, 0.7)],
        keyword=[scored(A, 3), scored(B, 2), scored(R, 1)],
        reranker=ScriptedReranker({R: 9.0}),
    )
    assert [h.chunk.chunk_id for h in outside.reranked or ()] == ["A", "B"]
    assert lost(attribute(IN_R, CHUNKS, outside, hybrid)) == {"fusion": 30}


def test_a_character_two_chunks_hold_is_lost_where_the_furthest_one_was():
    overlapping = ChunkSpanIndex([A, B, R, chunk("S", 120, 170)])
    hybrid = profile(vector_weight=0.6, keyword_weight=0.4)
    # R is in no list; S (holding 120-140) is ranked 3rd by both: those characters reach the top-k cut
    lists = stage_lists(
        hybrid,
        dense=[scored(A, 0.9), scored(B, 0.8), scored(chunk("S", 120, 170), 0.7)],
        keyword=[scored(A, 3), scored(B, 2), scored(chunk("S", 120, 170), 1)],
    )
    got = attribute(IN_R, overlapping, lists, hybrid)
    assert got.best_cover.characters == 30 and lost(got) == {"top_k": 20, "dense_candidates": 10}
    assert [(s.start, s.end, s.stage) for s in got.segments] == [
        (110, 120, "dense_candidates"),
        (120, 140, "top_k"),
    ]


def test_reference_text_no_chunk_holds_is_lost_to_chunking():
    gaps = ChunkSpanIndex([A, R])  # nothing holds 50-100
    got = attribute(
        [span(40, 120)],
        gaps,
        stage_lists(profile(top_k=2), dense=[scored(A, 0.9), scored(R, 0.8)]),
        profile(top_k=2),
    )
    assert got.retrieved_chars == 30 and lost(got) == {"chunking": 50}


def test_the_answer_splits_what_was_retrieved():
    two = profile(top_k=2)
    reference = [span(40, 60), span(110, 140)]  # 10 in A, 10 in B, 30 in R
    lists = stage_lists(two, dense=[scored(R, 0.9), scored(A, 0.8)])
    wrong = attribute(
        reference, CHUNKS, lists, two, AnswerOutcome(frozenset({ChunkId("R")}), False, "keyword")
    )
    assert wrong.retrieved_chars == 40 and wrong.answered == {
        "not_cited": 10,
        "answer_wrong": 30,
        "answer_correct": 0,
        "answer_unjudged": 0,
    }
    right = attribute(
        reference, CHUNKS, lists, two, AnswerOutcome(frozenset({ChunkId("R"), ChunkId("A")}), True)
    )
    assert right.answered is not None and right.answered["answer_correct"] == 40
    unjudged = attribute(reference, CHUNKS, lists, two, AnswerOutcome(frozenset({ChunkId("A")}), None))
    assert unjudged.answered is not None and unjudged.answered["answer_unjudged"] == 10
    assert attribute(reference, CHUNKS, lists, two).answered is None


def test_an_empty_reference_is_refused():
    with pytest.raises(ValueError, match="non-empty reference"):
        attribute([span(5, 5)], CHUNKS, stage_lists(profile(), dense=[scored(A, 0.9)]), profile())


# -- any retrieval: the attribution is a partition -----------------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Any, ...]:
    length = 120
    cuts = sorted(set(draw(st.lists(st.integers(1, length - 1), max_size=6))))
    bounds = [0, *cuts, length]
    chunks = [chunk(f"c{i}", a, b) for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    # some overlapping chunks, and gaps no chunk holds
    for i in range(draw(st.integers(0, 3))):
        a = draw(st.integers(0, length - 2))
        chunks.append(chunk(f"o{i}", a, draw(st.integers(a + 1, length))))
    chunks = [
        c
        for c in chunks
        if c.chunk_id not in draw(st.sets(st.sampled_from([c.chunk_id for c in chunks]), max_size=1))
    ]
    starts = draw(st.lists(st.integers(0, length - 1), min_size=1, max_size=3))
    reference = [span(a, min(length, a + draw(st.integers(1, 40)))) for a in starts]
    k = draw(st.integers(1, 4))
    vector, keyword_weight = draw(st.sampled_from([(1.0, 0.0), (0.0, 1.0), (0.6, 0.4), (0.3, 0.7)]))
    threshold = draw(st.sampled_from([None, 0.3, 0.6])) if vector else None
    reranks = draw(st.booleans())
    fields: dict[str, Any] = {"top_k": k, "vector_weight": vector, "keyword_weight": keyword_weight}
    if threshold is not None:
        fields["similarity_threshold"] = threshold
    if reranks:
        fields |= {"reranker": "cross-encoder", "rerank_depth": k + draw(st.integers(0, 2))}
    p = profile(**fields)
    dense_order = draw(st.permutations(chunks))[: draw(st.integers(0, len(chunks)))]
    keyword_order = draw(st.permutations(chunks))[: draw(st.integers(0, len(chunks)))]
    dense = [scored(c, 1.0 - i / 10) for i, c in enumerate(dense_order)]
    keyword = [scored(c, 10.0 - i) for i, c in enumerate(keyword_order)]
    reranker = ScriptedReranker({c: draw(st.floats(0, 1)) for c in chunks}) if reranks else None
    cited = draw(st.sets(st.sampled_from([c.chunk_id for c in chunks]))) if chunks else set()
    answer = draw(
        st.sampled_from([None, AnswerOutcome(frozenset(cited), draw(st.sampled_from([None, True, False])))])
    )
    return chunks, reference, p, dense, keyword, reranker, answer


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_the_stages_partition_the_missed_characters_exactly(scenario: tuple[Any, ...]):
    chunks, reference, p, dense, keyword, reranker, answer = scenario
    index = ChunkSpanIndex(chunks)
    lists = stage_lists(p, dense=dense, keyword=keyword, reranker=reranker)
    got = attribute(reference, index, lists, p, answer)
    size = total_length(merge_intervals(reference))
    retrieved = round(span_metrics(reference, lists.final).span_recall * size)
    assert got.reference_chars == size and got.retrieved_chars == retrieved
    # every missed character is one stage's, whole characters, none twice
    assert sum(got.lost.values()) == size - retrieved == got.missed_chars
    assert set(got.lost) == set(RETRIEVAL_STAGES) and all(n >= 0 for n in got.lost.values())
    # chunking loses exactly what no k chunks can hold; the others what the best k chunks held more
    assert got.lost["chunking"] == size - best_cover(merge_intervals(reference), chunks, p.top_k).characters
    assert 0 <= got.threshold_chars <= got.lost["dense_candidates"]
    # the segments tile the reference: by stage they are the counts
    assert merge_intervals(got.segments) == merge_intervals(reference)
    assert sum(s.end - s.start for s in got.segments) == size
    for stage in RETRIEVAL_STAGES:
        assert sum(s.end - s.start for s in got.segments if s.stage == stage) == got.lost[stage]
    assert sum(s.end - s.start for s in got.segments if s.threshold) == got.threshold_chars
    if answer is None:
        assert got.answered is None
    else:
        assert got.answered is not None and set(got.answered) == set(ANSWER_STAGES)
        assert sum(got.answered.values()) == retrieved
    # stages a profile does not have lose nothing
    if "bm25" not in p.retrievers or "knn" in p.retrievers:
        assert got.lost["keyword_candidates"] == 0
    if p.reranker is None:
        assert got.lost["rerank"] == 0
    if not p.is_fused and p.reranker is None:
        assert got.lost["fusion"] == 0
