"""A judge's judgements of a query, layered: a later one overrides the earlier ones on the text it read
and leaves them the rest."""

from __future__ import annotations

from rag_eval_pipeline.core.judging.judge_views import judge_views

from .builders import Q1, A, judgement, span


def test_judging_only_the_new_passages_adds_to_what_was_judged() -> None:
    first = judgement(Q1, "ann", [span(A, 0, 50)], [span(A, 0, 27)], at="2026-12-01T09:00:00Z")
    second = judgement(Q1, "ann", [span(A, 50, 94)], [span(A, 58, 80)], at="2026-12-02T09:00:00Z")
    (view,) = judge_views([first, second])[Q1]
    assert view.read == {A: [(0, 94)]}
    assert view.spans == {A: [(0, 27), (58, 80)]}
    assert view.verdict == "answers" and view.judged_at == "2026-12-02T09:00:00Z"


def test_judging_everything_again_replaces_the_earlier_word() -> None:
    first = judgement(Q1, "ann", [span(A, 0, 50)], [span(A, 0, 27)])
    again = judgement(Q1, "ann", [span(A, 0, 94)], verdict="not-answerable")
    (view,) = judge_views([first, again])[Q1]
    assert view.spans == {} and view.relevant == {} and view.verdict == "not-answerable"


def test_a_span_selected_outside_the_passages_counts_as_read() -> None:
    (view,) = judge_views([judgement(Q1, "ann", [span(A, 0, 20)], [span(A, 30, 40)])])[Q1]
    assert view.read == {A: [(0, 20), (30, 40)]}


def test_an_llm_judges_passage_by_passage_and_a_passage_graded_again_keeps_its_latest_grade() -> None:
    one = judgement(Q1, "llm", [span(A, 0, 27)], [span(A, 0, 7)], kind="llm", grade=3)
    two = judgement(Q1, "llm", [span(A, 28, 57)], kind="llm", grade=0, verdict="not-answerable")
    (view,) = judge_views([one, two])[Q1]
    assert view.relevant == {A: [(0, 27)]}  # the whole passage graded relevant
    assert view.spans == {A: [(0, 7)]} and view.verdict == "answers"
    regraded = judgement(Q1, "llm", [span(A, 0, 27)], kind="llm", grade=1, verdict="not-answerable")
    (view,) = judge_views([one, two, regraded])[Q1]
    assert view.relevant == {} and view.spans == {} and view.read == {A: [(0, 27), (28, 57)]}


def test_views_are_per_query_and_judge_sorted_by_name() -> None:
    views = judge_views([judgement(Q1, "zoe", [span(A, 0, 5)]), judgement(Q1, "ann", [span(A, 0, 5)])])
    assert [v.judge for v in views[Q1]] == ["ann", "zoe"]
