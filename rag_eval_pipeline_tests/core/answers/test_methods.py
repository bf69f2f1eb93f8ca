"""score_answers: every method per answer, the judge only where the hybrid needs it, failures kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.answers.judge import LLMJudge
from rag_eval_pipeline.core.answers.methods import ScoringItem, score_answers
from rag_eval_pipeline.core.answers.threshold import ThresholdChoice, fixed_threshold_choice
from rag_eval_pipeline.core.answers.types import Answer, MetricOutcome
from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.llm.accounting import BudgetExceeded, Price
from rag_eval_pipeline.core.types import ChunkId, QuestionId
from rag_eval_pipeline_tests.fakes import CountingEmbedder, PlannedEmbedder
from rag_eval_pipeline_tests.openai_server import openai_server, scripted_client

REFERENCE = "Paris is France's capital city"
FIXED = fixed_threshold_choice(0.75, "no labels file configured")
CHUNK = (ChunkId("chunk_aaa"), "Paris has been the capital of France since 987.")


def answer(qid: str, text: str, *, abstained: bool = False, failed: str = "") -> Answer:
    return Answer(
        QuestionId(qid),
        text,
        (CHUNK[0],) if not failed else (),
        (),
        "HIGH",
        abstained,
        "openai:gpt-4o-mini",
        "failed" if failed else "ok",
        failed,
    )


def item(qid: str, text: str, *, reference: str | None = REFERENCE, keywords=("Paris",), **kw) -> ScoringItem:
    return ScoringItem(
        QuestionId(qid),
        "What is the capital of France?",
        answer(qid, text, **kw),
        reference,
        keywords,
        (CHUNK,),
    )


ITEMS = [
    item("paris", "The capital of France is Paris"),  # similarity 0.965
    item("lyon", "The capital of France is Lyon"),  # 0.708: inside 0.75 +- 0.10
    item("idk", "I don't know", abstained=True),  # 0.013
    item("failed", "", failed="llm call failed: timed out"),
    item("noref", "Paris", reference=None, keywords=()),
]


def verdict_json(score: float) -> str:
    criterion = {"score": 0.5, "explanation": "Partly."}
    return json.dumps(
        {
            "score": score,
            "semantic_coverage": criterion,
            "factual_coverage": criterion,
            "hallucination": criterion,
            "citation_accuracy": criterion,
        }
    )


def judge_for(url: str, tmp_path: Path, prices: dict[str, Price] | None = None) -> LLMJudge:
    return LLMJudge(scripted_client(url, tmp_path, prices=prices))


def test_only_rows_within_the_margin_reach_the_judge(minilm: Embedder, tmp_path: Path):
    embedder = CountingEmbedder(minilm)
    stages: list[tuple[str, int, int]] = []
    with openai_server() as (url, script):
        script.responder = lambda body: verdict_json(0.2)
        judge = judge_for(url, tmp_path)
        scores = score_answers(
            ITEMS, embedder, threshold=FIXED, judge=judge, progress=lambda *a: stages.append(a)
        )
    [request] = script.chat_requests  # one row within the margin, one request
    assert "The capital of France is Lyon" in request["messages"][-1]["content"]
    assert judge.last_estimate is not None and judge.last_estimate.n_requests == 1
    assert len(embedder.calls) == 1
    paris, lyon, idk, failed, noref = scores
    assert [s.question_id for s in scores] == ["paris", "lyon", "idk", "failed", "noref"]
    assert paris.semantic_similarity.value == pytest.approx(0.965, abs=0.002)
    assert (paris.semantic_fixed.value, paris.hybrid, paris.hybrid_judgement) == (
        1.0,
        MetricOutcome.ok(1.0, "semantic"),
        None,
    )
    assert (lyon.semantic_fixed.value, lyon.hybrid) == (0.0, MetricOutcome.ok(0.0, "judge"))
    assert lyon.hybrid_judgement is not None and lyon.hybrid_judgement.score == 0.2
    assert lyon.keyword == MetricOutcome.ok(0.0, "missing: 'Paris'")
    # An abstention is scored like any answer, and scores 0 everywhere.
    assert [idk.keyword.value, idk.semantic_fixed.value, idk.semantic_dynamic.value, idk.hybrid.value] == [
        0.0
    ] * 4
    no_answer = MetricOutcome.skipped("no answer: llm call failed: timed out")
    assert {failed.keyword, failed.semantic_similarity, failed.semantic_fixed, failed.hybrid} == {no_answer}
    assert noref.keyword == MetricOutcome.skipped("no expected keywords")
    assert noref.semantic_fixed == noref.hybrid == MetricOutcome.skipped("no reference answer")
    assert ("answer judging", 1, 1) in stages and stages[-1] == ("answer scoring", 5, 5)


def test_a_judge_failure_fails_only_the_hybrid_of_that_row(tmp_path: Path):
    embedder = PlannedEmbedder([REFERENCE], {"near": 0.70, "far": 0.95})
    items = [item("near", "near"), item("far", "far")]
    with openai_server() as (url, script):
        script.responder = lambda body: "I cannot grade this."
        judge = judge_for(url, tmp_path)
        near, far = score_answers(items, embedder, threshold=FIXED, judge=judge)
        sent = len(script.chat_requests)
        [alone] = score_answers(items[1:], embedder, threshold=FIXED, judge=judge)
    assert len(script.chat_requests) == sent  # nothing within the margin: nothing sent
    assert judge.last_estimate is not None and judge.last_estimate.n_requests == 0
    assert alone == far
    assert near.hybrid.status == "failed"
    assert near.hybrid.detail.startswith("judge failed: invalid reply after 2 attempts")
    assert near.hybrid_judgement is not None and near.hybrid_judgement.status == "failed"
    assert near.semantic_fixed.value == 0.0 and near.keyword.status == "ok"
    assert far.hybrid == MetricOutcome.ok(1.0, "semantic")


def test_without_a_judge_the_hybrid_is_skipped_and_the_dynamic_threshold_is_used():
    embedder = PlannedEmbedder([REFERENCE], {"a": 0.72, "b": 0.40})
    fitted = ThresholdChoice(
        0.7, "fitted", "fitted on 20 labelled answers: accuracy 0.900 at 0.70", "accuracy", 0.9, 20
    )
    a, b = score_answers([item("a", "a"), item("b", "b")], embedder, threshold=fitted)
    assert a.semantic_fixed == MetricOutcome.ok(0.0, "similarity 0.720 < 0.75")
    assert a.semantic_dynamic == MetricOutcome.ok(1.0, "similarity 0.720 >= 0.70 (fitted)")
    assert b.semantic_dynamic.value == 0.0
    assert a.hybrid == b.hybrid == MetricOutcome.skipped("no judge LLM configured")
    fallback = score_answers([item("a", "a")], embedder, threshold=FIXED)[0]
    assert fallback.semantic_dynamic.detail == "similarity 0.720 < 0.75 (fixed fallback)"
    assert embedder.calls == [["a", REFERENCE, "b"], ["a", REFERENCE]]


class Broken:
    model_id = "broken"
    dimension = 2

    def embed(self, texts):
        raise RuntimeError("model file is corrupt")


def test_an_error_marks_only_its_own_metric_failed():
    items = [item("a", "99 percent", keywords=("%",)), item("b", "Paris")]
    a, b = score_answers(items, Broken(), threshold=FIXED)
    assert a.keyword == MetricOutcome.failed(
        "ValueError: the expected keyword '%' has no letter or digit to match"
    )
    assert b.keyword == MetricOutcome.ok(1.0, "all 1 keywords found")
    failure = MetricOutcome.failed("embedding failed: RuntimeError: model file is corrupt")
    assert a.semantic_similarity == b.semantic_fixed == b.semantic_dynamic == failure
    assert b.hybrid.status == "skipped"  # no judge configured


def test_the_budget_is_checked_once_before_any_request(tmp_path: Path):
    embedder = PlannedEmbedder([REFERENCE], {"a": 0.70, "b": 0.71, "c": 0.99})
    items = [item("a", "a"), item("b", "b"), item("c", "c")]
    with openai_server() as (url, script):
        judge = judge_for(url, tmp_path, prices={"gpt-4o-mini": Price(1000.0, 1000.0)})
        with pytest.raises(BudgetExceeded):
            score_answers(items, embedder, threshold=FIXED, judge=judge, budget_usd=0.01)
        assert script.chat_requests == []
    assert judge.last_estimate is not None and judge.last_estimate.n_requests == 2
    with pytest.raises(ValueError, match="must not be negative"):
        score_answers(items, embedder, threshold=FIXED, hybrid_margin=-0.1)
