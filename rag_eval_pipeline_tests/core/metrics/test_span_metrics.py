"""Token-level metrics against a deliberately naive per-character reference implementation."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.metrics import ChunkSpanIndex, OmegaPrecision, precision_omega, span_metrics
from rag_eval_pipeline.core.types import CharacterSpan, ChunkId, DocumentId, PositionAwareChunk

Triple = tuple[str, int, int]


def span(doc: str, start: int, end: int) -> CharacterSpan:
    return CharacterSpan(DocumentId(doc), start, end, "x" * (end - start))


def chunk(name: str, doc: str, start: int, end: int) -> PositionAwareChunk:
    return PositionAwareChunk(ChunkId(name), DocumentId(doc), start, end, "x" * (end - start))


def chars(spans: list[Triple]) -> set[tuple[str, int]]:
    return {(doc, i) for doc, start, end in spans for i in range(start, end)}


def ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def naive(gt: list[Triple], ret: list[Triple], chunk_set: list[Triple]) -> dict[str, float]:
    g, r = chars(gt), chars(ret)
    shared = len(g & r)
    ret_sum = sum(end - start for _, start, end in ret)
    touching = [c for c in chunk_set if chars([c]) & g]
    omega = chars(touching)
    # Chroma: a chunk counts when max(starts) <= min(ends) with a reference (so a mere touch counts),
    # and the reference characters no chunk covers join the denominator
    chroma = chars([c for c in chunk_set for r in gt if c[0] == r[0] and max(c[1], r[1]) <= min(c[2], r[2])])
    return {
        "span_recall": shared / len(g),
        "span_precision": ratio(shared, len(r)),
        "span_iou": ratio(shared, len(g | r)),
        "precision_chroma": ratio(shared, ret_sum),
        "iou_chroma": ratio(shared, ret_sum + len(g) - shared),
        "precision_omega": ratio(len(omega & g), len(omega)),
        "precision_omega_chroma": ratio(len(chroma & g), len(chroma | g)),
    }


def triples(doc_count: int, min_size: int, max_size: int) -> st.SearchStrategy[list[Triple]]:
    one = st.tuples(st.sampled_from("abc"[:doc_count]), st.integers(0, 40), st.integers(0, 12)).map(
        lambda t: (t[0], t[1], t[1] + t[2])
    )
    return st.lists(one, min_size=min_size, max_size=max_size)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Triple], list[Triple], list[Triple]]:
    docs = draw(st.integers(1, 3))
    gt = draw(triples(docs, 1, 5).filter(lambda spans: bool(chars(spans))))
    pool = draw(triples(docs, 0, 6))
    # Reuse ground-truth spans and pool items so duplicates and exact matches are common.
    ret = draw(st.lists(st.sampled_from(gt + pool), max_size=6)) if gt + pool else []
    chunk_set = draw(triples(docs, 0, 10)) + draw(
        st.lists(st.sampled_from(ret), max_size=3) if ret else st.just([])
    )
    return gt, ret, chunk_set


@settings(max_examples=300, deadline=None)
@given(cases())
@example(
    (
        [("a", 0, 5), ("a", 5, 10), ("a", 0, 5)],  # touching and duplicated ground truth
        [("a", 0, 4), ("a", 2, 8), ("a", 10, 12), ("b", 0, 3)],  # overlapping, touching, other document
        [("a", 10, 20), ("a", 8, 12), ("b", 0, 50), ("a", 0, 10), ("a", 0, 10)],
    )
)
@example(([("a", 5, 15), ("b", 3, 3)], [], [("a", 0, 5), ("a", 8, 12), ("b", 0, 3), ("b", 3, 9)]))
def test_metrics_match_per_character_reference(case: tuple[list[Triple], list[Triple], list[Triple]]) -> None:
    gt, ret, chunk_set = case
    expected = naive(gt, ret, chunk_set)
    metrics = span_metrics([span(*t) for t in gt], [span(*t) for t in ret])
    chunks = [chunk(f"c{i}", *t) for i, t in enumerate(chunk_set)]
    omega = precision_omega([span(*t) for t in gt], chunks)
    got = {
        "span_recall": metrics.span_recall,
        "span_precision": metrics.span_precision,
        "span_iou": metrics.span_iou,
        "precision_chroma": metrics.precision_chroma,
        "iou_chroma": metrics.iou_chroma,
        "precision_omega": omega.precision_omega,
        "precision_omega_chroma": omega.precision_omega_chroma,
    }
    assert got == pytest.approx(expected, rel=1e-12, abs=0)
    assert omega == precision_omega([span(*t) for t in gt], ChunkSpanIndex(chunks))


def test_overlapping_retrieved_chunks_count_once_except_in_chroma_variants() -> None:
    gt = [span("d", 10, 20)]
    retrieved = [chunk("a", "d", 0, 15), chunk("b", "d", 5, 25)]  # merged: [0, 25), 25 chars; sum: 35
    m = span_metrics(gt, retrieved)
    assert m.span_recall == 1.0
    assert m.span_precision == 10 / 25
    assert m.span_iou == 10 / 25
    assert m.precision_chroma == 10 / 35
    assert m.iou_chroma == 10 / 35


def test_partial_hit_across_documents() -> None:
    gt = [span("d", 0, 10), span("e", 0, 10)]
    m = span_metrics(gt, [chunk("a", "d", 5, 15), chunk("b", "f", 0, 10)])
    assert (m.span_recall, m.span_precision, m.span_iou) == (5 / 20, 5 / 20, 5 / 35)


def test_empty_retrieval_scores_zero() -> None:
    m = span_metrics([span("d", 0, 10)], [])
    assert (m.span_recall, m.span_precision, m.span_iou, m.precision_chroma, m.iou_chroma) == (0, 0, 0, 0, 0)


@pytest.mark.parametrize("gt", [[], [span("d", 3, 3)]])
def test_ground_truth_without_characters_is_invalid(gt: list[CharacterSpan]) -> None:
    with pytest.raises(ValueError, match="ground-truth"):
        span_metrics(gt, [chunk("a", "d", 0, 5)])
    with pytest.raises(ValueError, match="ground-truth"):
        precision_omega(gt, [chunk("a", "d", 0, 5)])


def test_precision_omega_uses_every_chunk_overlapping_the_reference_not_just_retrieved() -> None:
    chunk_set = [
        chunk("a", "d", 0, 10),
        chunk("b", "d", 10, 20),
        chunk("c", "d", 20, 30),
        chunk("w", "d", 5, 15),
    ]
    # Reference [8, 12): a, b and w overlap it; c only lies further on; merged [0, 20) (a sum would be 30).
    omega = precision_omega([span("d", 8, 12)], chunk_set)
    assert (omega.precision_omega, omega.precision_omega_chroma) == (4 / 20, 4 / 20)
    # Touching is not overlapping: [10, 20) meets a and c only at their edges; b and w overlap it.
    omega = precision_omega([span("d", 10, 20)], chunk_set)
    assert omega.precision_omega == 10 / 15
    assert precision_omega([span("x", 0, 5)], chunk_set) == OmegaPrecision(0.0, 0.0)


# The cases below follow Chroma's _full_precision_score (chunking_evaluation/evaluation_framework/
# base_evaluation.py) by hand: intersect_two_ranges keeps (max start, min end) when start <= end, every
# chunk with such an intersection joins the denominator (union_ranges: merged), and the reference
# characters no intersection removed ("unused highlights") join it too.


def test_precision_omega_chroma_counts_a_chunk_that_only_touches_the_reference() -> None:
    chunk_set = [chunk("a", "d", 0, 10), chunk("b", "d", 10, 20), chunk("c", "d", 20, 30)]
    # Reference [10, 20): a ends where it starts and c starts where it ends; (10, 10) and (20, 20) are
    # intersections for Chroma, so a and c join the denominator: 10 / |[0, 30)|.
    omega = precision_omega([span("d", 10, 20)], chunk_set)
    assert (omega.precision_omega, omega.precision_omega_chroma) == (1.0, 10 / 30)


def test_precision_omega_chroma_merges_overlapping_chunks_where_a_sum_would_not() -> None:
    # a and b overlap on [5, 15): summed lengths 30, merged [0, 20) is 20; reference [8, 12) is inside both
    chunk_set = [chunk("a", "d", 0, 15), chunk("b", "d", 5, 20)]
    omega = precision_omega([span("d", 8, 12)], chunk_set)
    assert omega.precision_omega_chroma == 4 / 20 != 4 / 30


def test_precision_omega_chroma_counts_reference_characters_no_chunk_covers() -> None:
    # the chunk set leaves [10, 15) of the reference uncovered: Chroma's denominator is [0, 10) + [10, 15)
    omega = precision_omega([span("d", 5, 15)], [chunk("a", "d", 0, 10), chunk("b", "d", 20, 30)])
    assert (omega.precision_omega, omega.precision_omega_chroma) == (5 / 10, 5 / 15)
