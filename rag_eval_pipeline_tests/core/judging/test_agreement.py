"""Agreement between judges: Cohen's kappa on the relevance of the passages both read, checked against
a hand computation, and the character overlap (IoU) of their spans."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judging.agreement import Table, agreement
from rag_eval_pipeline.core.judging.judge_views import judge_views
from rag_eval_pipeline.core.judging.types import PooledPassage

from .builders import Q1, Q2, A, B, corpus, judgement, span

# ten passages: five of a.md for q-1, five of b.md for q-2
WINDOWS = [(Q1, span(A, s, s + 15)) for s in (0, 19, 38, 57, 76)] + [
    (Q2, span(B, s, s + 15)) for s in (0, 16, 32, 48, 64)
]
POOL = [PooledPassage(q, s, corpus()[s.doc_id].sha256, ("run #1",)) for q, s in WINDOWS]
# which passages each judge found relevant (a span of 4 characters inside each)
ANN = {0, 1, 2, 3}
BOB = {0, 1, 2, 4, 5}


def judged_by(name: str, relevant: set[int]) -> list:
    found = []
    for query in (Q1, Q2):
        items = [i for i, (q, _) in enumerate(WINDOWS) if q == query]
        spans = [
            span(WINDOWS[i][1].doc_id, WINDOWS[i][1].start + 1, WINDOWS[i][1].start + 5)
            for i in items
            if i in relevant
        ]
        found.append(judgement(query, name, [WINDOWS[i][1] for i in items], spans))
    return found


def test_kappa_matches_a_hand_computation() -> None:
    # The 2x2 table of ann (rows) and bob (columns) over the ten passages:
    #                 bob relevant   bob not
    #   ann relevant        3           1        (passages 0-2; 3)
    #   ann not             2           4        (passages 4, 5; 6-9)
    # p_o = (3 + 4) / 10 = 0.7
    # p_e = (4/10)(5/10) + (6/10)(5/10) = 0.2 + 0.3 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    (pair,) = agreement(judge_views(judged_by("ann", ANN) + judged_by("bob", BOB)), POOL)
    assert (pair.judge_a, pair.judge_b, pair.n_queries) == ("ann", "bob", 2)
    assert pair.table == Table(both=3, only_a=1, only_b=2, neither=4)
    assert pair.table.observed == pytest.approx(0.7)
    assert pair.kappa == pytest.approx(0.4)
    # spans: q-1 ann 16 characters, bob 16, 12 shared -> 12/20; q-2 ann none, bob 4 -> 0; mean 0.3
    assert pair.span_iou == pytest.approx(0.3)
    assert pair.n_span_queries == 2
    assert "kappa 0.40 over 10 passages both read, span overlap (IoU) 0.30 over 2 queries" in pair.describe()


def test_only_passages_both_read_are_items() -> None:
    ann = judged_by("ann", ANN)
    # bob read only the first three passages of q-1, and did not judge q-2
    bob = [judgement(Q1, "bob", [w for _, w in WINDOWS[:3]], [span(A, 1, 5)])]
    (pair,) = agreement(judge_views(ann + bob), POOL)
    assert pair.n_queries == 1
    assert pair.table == Table(both=1, only_a=2, only_b=0, neither=0)
    # ann's span in passage 3, which bob never saw, is no disagreement on where the answer is
    assert pair.span_iou == pytest.approx(4 / 12)


def test_an_llm_judgement_is_relevant_from_its_grade() -> None:
    ann = judged_by("ann", ANN)
    # the LLM judges one passage a judgement: grade 2 or more is relevant, whatever it quoted
    llm = [
        judgement(q, "llm:gpt", [w], kind="llm", grade=3 if i in (0, 1) else 1, verdict="not-answerable")
        for i, (q, w) in enumerate(WINDOWS)
    ]
    (pair,) = agreement(judge_views(ann + llm), POOL)
    assert pair.table == Table(both=2, only_a=2, only_b=0, neither=6)
    # p_o 0.8, p_e = 0.4 * 0.2 + 0.6 * 0.8 = 0.56, kappa = 0.24 / 0.44
    assert pair.kappa == pytest.approx(0.24 / 0.44)


def test_kappa_is_undefined_when_both_judges_put_everything_in_one_class() -> None:
    views = judge_views(judged_by("ann", set()) + judged_by("bob", set()))
    (pair,) = agreement(views, POOL)
    assert pair.table == Table(neither=10)
    assert pair.kappa is None and pair.table.observed == 1.0
    assert pair.span_iou is None
    assert "kappa undefined (one class for both)" in pair.describe()


def test_without_a_pool_each_stretch_both_read_is_an_item() -> None:
    (pair,) = agreement(judge_views(judged_by("ann", ANN) + judged_by("bob", BOB)))
    assert pair.table.n == 10  # the windows do not touch: one stretch each


def test_judges_with_no_query_in_common_make_no_pair() -> None:
    ann = [judgement(Q1, "ann", [WINDOWS[0][1]])]
    bob = [judgement(Q2, "bob", [WINDOWS[5][1]])]
    assert agreement(judge_views(ann + bob), POOL) == []


def test_a_query_missing_from_the_pool_counts_each_stretch_both_read() -> None:
    views = judge_views(judged_by("ann", ANN) + judged_by("bob", BOB))
    (pair,) = agreement(views, [p for p in POOL if p.query_id == Q1])
    assert pair.table.n == 10
    (empty,) = agreement(views, [])
    assert empty.table == pair.table
