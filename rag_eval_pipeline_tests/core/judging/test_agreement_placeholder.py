"""The placeholder agreement (replaced by core/judging/agreement.py when merged): kappa and span overlap
against a hand computation."""

from __future__ import annotations

from rag_eval_pipeline.core.judging.agreement_placeholder import cohen_kappa, judge_agreement
from rag_eval_pipeline.core.judging.types import Judgement, JudgeName, QueryId
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId

DOC = DocumentId("d.md")
TEXT = "abcdefghij" * 4


def span(start: int, end: int) -> CharacterSpan:
    return CharacterSpan(DOC, start, end, TEXT[start:end])


PASSAGES = (span(0, 10), span(10, 20), span(20, 30), span(30, 40))


def judged(judge: str, *spans: CharacterSpan) -> Judgement:
    verdict = "answers" if spans else "not-answerable"
    return Judgement(
        QueryId("q"), JudgeName(judge), "human", verdict, spans, PASSAGES, "2026-12-02T10:00:00Z"
    )  # type: ignore[arg-type]


def test_kappa_and_overlap_match_a_hand_computation() -> None:
    # ann: passages 1 and 2 relevant; bob: passage 1 only. Observed 3/4; chance .5*.25 + .5*.75 = .5;
    # kappa (.75 - .5) / (1 - .5) = .5. Characters: ann 0-10 and 12-15 (13), bob 5-10 (5): 5 / 13.
    (row,) = judge_agreement([judged("bob", span(5, 10)), judged("ann", span(0, 10), span(12, 15))])
    assert (row.judge_a, row.judge_b, row.n_queries, row.n_passages) == ("ann", "bob", 1, 4)
    assert row.kappa == 0.5
    assert row.span_iou == 5 / 13 and row.n_span_queries == 1
    assert row.describe().startswith("ann / bob: 1 queries both judged, kappa 0.50 over 4 passages")


def test_no_chance_of_disagreement_has_no_kappa() -> None:
    assert cohen_kappa([]) is None
    assert cohen_kappa([(False, False), (False, False)]) is None
    (row,) = judge_agreement([judged("ann"), judged("bob")])
    assert row.kappa is None and row.span_iou is None
