"""Context recall: the free heuristic, its warnings, escalation, and the LLM judge through the real
`openai` client against the scripted local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.answers.production import production_metrics
from rag_eval_pipeline.core.answers.recall import (
    Escalation,
    LLMRecallJudge,
    context_recall_heuristic,
    escalation,
    recall_warnings,
)
from rag_eval_pipeline.core.answers.types import MetricOutcome
from rag_eval_pipeline.core.llm.accounting import BudgetExceeded, Price, estimate_prompt_tokens
from rag_eval_pipeline_tests.core.answers.production_data import TableEmbedder, answer, hit, item, trace
from rag_eval_pipeline_tests.openai_server import openai_server, scripted_client

QUESTION = "How fast does the main pump run?"  # content terms: fast, main, pump, run
PUMP = "The main pump runs at 1,450 rpm."  # covers main, pump, run: 3 of 4


@pytest.mark.parametrize(
    ("cited", "the_trace", "expected"),
    [
        # the dense side returned all 5 it was asked for and the answer cites rank 5 (= top_k)
        (["c5"], trace(knn=5), ("HIT_RETRIEVAL_LIMIT",)),
        (["c1", "c5"], trace(bm25=7), ("HIT_RETRIEVAL_LIMIT",)),
        (["c4"], trace(knn=5), ()),  # the cut-off chunk is not cited
        (["c5"], trace(knn=4, bm25=4), ()),  # no retriever ran out of candidates
        (["c1"], trace(knn=10, below=6), ("HIGH_THRESHOLD_FILTERING",)),
        (["c1"], trace(knn=10, below=5), ()),  # exactly half: not more than 50 %
        (["c5"], trace(knn=10, below=6), ("HIT_RETRIEVAL_LIMIT", "HIGH_THRESHOLD_FILTERING")),
    ],
)
def test_recall_warnings(cited, the_trace, expected):
    hits = [hit(r, PUMP) for r in range(1, 6)]
    assert recall_warnings(answer("x", cited), hits, the_trace, top_k=5, candidate_depth=5) == expected


def test_a_list_shorter_than_top_k_was_not_cut():
    hits = [hit(r, PUMP) for r in range(1, 4)]  # the threshold left 3 of top_k 5
    assert recall_warnings(answer("x", ["c3"]), hits, trace(knn=5, below=2), top_k=5, candidate_depth=5) == ()


@pytest.mark.parametrize(
    ("warnings", "value", "note"),
    [
        ((), 0.75, ""),
        (("HIT_RETRIEVAL_LIMIT",), 0.75 * 0.7, "; x0.7 for HIT_RETRIEVAL_LIMIT"),
        (("HIGH_THRESHOLD_FILTERING",), 0.75 * 0.85, "; x0.85 for HIGH_THRESHOLD_FILTERING"),
        (("HIT_RETRIEVAL_LIMIT", "HIGH_THRESHOLD_FILTERING"), 0.75 * 0.7, "; x0.7 for HIT_RETRIEVAL_LIMIT"),
    ],
)
def test_recall_heuristic_covers_question_terms_with_penalties(warnings, value, note):
    hits = [hit(1, PUMP), hit(2, "Valves are tested in March.")]
    outcome = context_recall_heuristic(QUESTION, answer("1,450 rpm [c1]", ["c1"]), hits, warnings)
    assert outcome.value == pytest.approx(value)
    assert outcome.detail == f"3 of 4 question terms in the retrieved text{note}"


def test_recall_heuristic_is_zero_after_an_abstention_and_skips_an_empty_question():
    hits = [hit(1, PUMP)]
    assert context_recall_heuristic(QUESTION, answer(abstained=True), hits, ()) == MetricOutcome.ok(
        0.0, "the answer abstained"
    )
    assert context_recall_heuristic("What is it?", answer(), hits, ()) == MetricOutcome.skipped(
        "the question has no content terms"
    )
    assert context_recall_heuristic(QUESTION, answer(), [], ()).value == 0.0  # nothing retrieved


def test_escalation_rules():
    assert escalation(MetricOutcome.ok(0.5), (), 0.7) == Escalation(True, "heuristic 0.50 < 0.7")
    assert escalation(MetricOutcome.ok(0.95), ("HIGH_THRESHOLD_FILTERING",), 0.7) == Escalation(
        True, "warning HIGH_THRESHOLD_FILTERING"
    )
    assert escalation(MetricOutcome.ok(0.82), (), 0.7) == Escalation(
        False, "heuristic 0.82 >= 0.7, no warning"
    )
    assert escalation(MetricOutcome.ok(0.7), (), 0.7).escalate is False  # the threshold itself is fine
    assert escalation(MetricOutcome.skipped("no terms"), (), 0.7) == Escalation(
        True, "heuristic skipped: no terms"
    )


# Three questions: one whose heuristic is low, one whose heuristic is perfect but raises a warning,
# one that is fine. Only the first two may reach the server.
LOW = "How fast does the main pump run?"  # "fast" missing: 0.75 < 0.8
WARNED = "When are relief valves tested?"  # 1.0 x 0.85 >= 0.8, but the threshold removed 6 of 10
FINE = "Who leads the night shift?"  # fully covered, no warning


def three_items() -> list[Any]:
    low_hits = [hit(r, f"Filler passage number {r} about cooling.", chunk=f"low{r}") for r in range(1, 13)]
    low_hits[0] = hit(1, PUMP, chunk="low1")
    return [
        item(LOW, answer("It runs at 1,450 rpm [low1].", ["low1"], qid="low"), low_hits),
        item(
            WARNED,
            answer("In March [w1].", ["w1"], qid="warned"),
            [hit(1, "Relief valves are tested in March.", chunk="w1")],
            trace("warned", knn=10, below=6),
        ),
        item(
            FINE,
            answer("Zoë Mbeki [f1].", ["f1"], qid="fine"),
            [hit(1, "Zoë Mbeki leads the night shift.", chunk="f1")],
        ),
    ]


def judge_for(url: str, tmp_path: Path, model: str = "gpt-4o-mini", **prices: Price) -> LLMRecallJudge:
    return LLMRecallJudge(scripted_client(url, tmp_path, model=model, prices=prices), repair_attempts=1)


def run_three(judge: LLMRecallJudge | None, budget_usd: float | None = None) -> Any:
    return production_metrics(
        three_items(),
        TableEmbedder(),
        top_k=5,
        candidate_depth=20,
        retrievers=("knn",),
        recall_threshold=0.8,
        recall_judge=judge,
        budget_usd=budget_usd,
    )


def test_only_escalated_questions_reach_the_judge_and_a_bad_reply_fails(tmp_path: Path):
    def responder(body: dict[str, Any]) -> str:
        prompt = body["messages"][1]["content"]
        if prompt.startswith(f"Question: {LOW}"):
            return json.dumps({"recall": 0.25, "missing": "the pump's rated speed"})
        return "I think the context is mostly fine."  # never JSON, not even after the repair prompt

    with openai_server() as (url, script):
        script.responder = responder
        judge = judge_for(url, tmp_path)
        run = run_three(judge)
    low, warned, fine = run.rows
    assert [r.escalated for r in run.rows] == [True, True, False]
    assert low.escalation_reason == "heuristic 0.75 < 0.8"
    assert warned.escalation_reason == "warning HIGH_THRESHOLD_FILTERING"
    assert low.context_recall_llm == MetricOutcome.ok(0.25, "missing: the pump's rated speed")
    assert warned.context_recall_llm.status == "failed"  # never a 0
    assert warned.context_recall_llm.value is None
    assert "invalid reply after 2 attempts" in warned.context_recall_llm.detail
    assert fine.context_recall_llm == MetricOutcome.skipped("heuristic 1.00 >= 0.8, no warning")

    requests = script.chat_requests
    assert len(requests) == 3  # low once, warned twice (the repair prompt); fine never
    assert all(FINE not in m["content"] for r in requests for m in r["messages"])
    first = requests[0]
    assert first["temperature"] == 0.0 and first["response_format"] == {"type": "json_object"}
    context = next(r for r in requests if r["messages"][1]["content"].startswith(f"Question: {LOW}"))
    user = context["messages"][1]["content"]
    assert "[1] The main pump runs at 1,450 rpm." in user
    assert "[10] Filler passage number 10" in user and "number 11" not in user  # first 10 chunks only

    assert (run.n_questions, run.n_escalated, run.calls_avoided) == (3, 2, 1)
    assert run.escalated_fraction == pytest.approx(2 / 3)
    assert run.judge_model == judge.model_id


def test_savings_are_the_cost_of_the_questions_not_sent(tmp_path: Path):
    with openai_server() as (url, script):

        def responder(body: dict[str, Any]) -> str:
            first_try = len(body["messages"]) == 2
            if first_try and body["messages"][1]["content"].startswith(f"Question: {LOW}"):
                return '{"recall": 1.7}'  # out of range: repaired on the second attempt
            return '{"recall": 1.0, "missing": ""}'

        script.responder = responder
        judge = judge_for(url, tmp_path)
        run = run_three(judge)
        unpriced = run_three(judge_for(url, tmp_path / "unpriced", model="my-local-model"))
    price = Price(0.15, 0.60)  # gpt-4o-mini's list price
    fine_messages, params = judge.request(FINE, three_items()[2].hits)
    fine_cost = price.cost(estimate_prompt_tokens(fine_messages), params.max_tokens)
    assert run.escalated_estimate is not None and run.all_estimate is not None
    assert (run.escalated_estimate.n_requests, run.all_estimate.n_requests) == (2, 3)
    assert run.savings_usd == pytest.approx(fine_cost)
    assert run.savings_usd == pytest.approx(run.all_estimate.cost_usd - run.escalated_estimate.cost_usd)
    assert run.rows[0].context_recall_llm == MetricOutcome.ok(1.0, "nothing missing (valid after 2 attempts)")
    assert run.rows[1].context_recall_llm == MetricOutcome.ok(1.0, "nothing missing")
    repair = next(r for r in script.chat_requests if len(r["messages"]) == 4)
    assert '"recall" must lie between 0 and 1, got 1.7' in repair["messages"][3]["content"]
    assert run.as_metadata() == {
        "n_questions": 3,
        "n_escalated": 2,
        "escalated_fraction": pytest.approx(2 / 3),
        "calls_avoided": 1,
        "recall_judge_model": judge.model_id,
        "escalated_cost_estimate_usd": run.escalated_estimate.cost_usd,
        "all_questions_cost_estimate_usd": run.all_estimate.cost_usd,
        "savings_usd": run.savings_usd,
    }
    assert unpriced.all_estimate is not None and unpriced.all_estimate.cost_usd is None
    assert unpriced.savings_usd is None


def test_budget_is_checked_before_any_request(tmp_path: Path):
    with openai_server() as (url, script):
        judge = judge_for(url, tmp_path, **{"gpt-4o-mini": Price(1000.0, 1000.0)})
        with pytest.raises(BudgetExceeded, match="exceeds the budget cap"):
            run_three(judge, budget_usd=1e-9)
        assert script.chat_requests == []


def test_escalation_without_a_judge_is_counted_but_skipped():
    run = run_three(None)
    low, warned, fine = run.rows
    assert low.context_recall_llm == MetricOutcome.skipped("escalation needed; no LLM configured")
    assert warned.context_recall_llm == MetricOutcome.skipped("escalation needed; no LLM configured")
    assert fine.context_recall_llm.status == "skipped" and not fine.escalated
    assert warned.recall_warnings == ("HIGH_THRESHOLD_FILTERING",)
    assert warned.context_recall_heuristic.value == pytest.approx(0.85)
    assert (run.n_escalated, run.calls_avoided) == (2, 1)
    assert run.escalated_estimate is None and run.all_estimate is None and run.savings_usd is None


def test_a_failure_while_looking_for_warnings_fails_the_heuristic_and_escalates():
    broken = trace(knn=None)  # type: ignore[arg-type]  (a corrupt trace row)
    run = production_metrics(
        [item(QUESTION, answer("1,450 rpm [c1]", ["c1"]), [hit(1, PUMP)], broken)],
        TableEmbedder(),
        top_k=1,
        candidate_depth=1,
        retrievers=("knn",),
    )
    (row,) = run.rows
    assert row.context_recall_heuristic.status == "failed"
    assert row.context_recall_heuristic.detail.startswith("recall warnings: TypeError")
    assert row.recall_warnings == () and row.escalated
    assert row.escalation_reason.startswith("heuristic failed: recall warnings: TypeError")
    assert row.context_precision.value == 1.0  # the rest of the row is computed
