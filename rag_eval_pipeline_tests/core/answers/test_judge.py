"""The LLM judge through the real `openai` client against the scripted local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.answers.judge import JudgeItem, LLMJudge, validate_verdict
from rag_eval_pipeline.core.answers.types import Criterion, Judgement
from rag_eval_pipeline.core.llm.accounting import BudgetExceeded, Price
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.json_reply import InvalidReply
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline.core.types import ChunkId, QuestionId
from rag_eval_pipeline_tests.openai_server import openai_server, scripted_client

ITEM = JudgeItem(
    QuestionId("q1"),
    "What is the capital of France?",
    "Paris is France's capital city",
    "The capital of France is Paris [chunk_aaa].",
    ((ChunkId("chunk_aaa"), "Paris has been the capital of France since 987."),),
)


def reply(score: Any = 1.0, **overrides: Any) -> str:
    obj: dict[str, Any] = {
        "score": score,
        "semantic_coverage": {"score": 1.0, "explanation": "Same meaning as the reference."},
        "factual_coverage": {"score": 1, "explanation": "Names Paris."},
        "hallucination": {"score": 0, "explanation": "Nothing unsupported."},
        "citation_accuracy": {"score": 0.9, "explanation": "The chunk says so."},
    }
    obj.update(overrides)
    return json.dumps(obj)


def judge_for(
    url: str, tmp_path: Path, *, repair_attempts: int = 1, prices: dict[str, Price] | None = None, **kw: Any
) -> LLMJudge:
    return LLMJudge(scripted_client(url, tmp_path, prices=prices), repair_attempts=repair_attempts, **kw)


def test_a_valid_judgement_is_parsed_from_a_deterministic_json_request(tmp_path: Path):
    long_reason = "Because " + "the chunk says so " * 40
    with openai_server() as (url, script):
        script.chat_contents = [reply(0.8, citation_accuracy={"score": 0.5, "explanation": long_reason})]
        judge = judge_for(url, tmp_path)
        [judgement] = judge.judge_all([ITEM])
    assert judgement.status == "ok" and judgement.attempts == 1
    assert judgement.score == 0.8 and judge.is_correct(judgement)
    assert judgement.judge_model == judge.model_id
    assert judgement.semantic_coverage == Criterion(1.0, "Same meaning as the reference.")
    assert judgement.hallucination == Criterion(0.0, "Nothing unsupported.")
    assert judgement.citation_accuracy is not None
    explanation = judgement.citation_accuracy.explanation
    assert len(explanation) == 300 and explanation.endswith("…")
    [request] = script.chat_requests
    assert request["temperature"] == 0.0
    assert request["response_format"] == {"type": "json_object"}
    prompt = request["messages"][-1]["content"]
    for part in (ITEM.question, ITEM.reference_answer, ITEM.answer_text, "[chunk_aaa]", "since 987"):
        assert part in prompt
    assert judge.last_estimate is not None and judge.last_estimate.n_requests == 1


def test_an_unparseable_reply_is_repaired(tmp_path: Path):
    with openai_server() as (url, script):
        script.chat_contents = ["Sure! The answer looks right to me.", reply(1.0)]
        [judgement] = judge_for(url, tmp_path).judge_all([ITEM])
    assert (judgement.status, judgement.score, judgement.attempts) == ("ok", 1.0, 2)
    repair = script.chat_requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! The answer looks right to me."}
    assert "That reply cannot be used" in repair[-1]["content"]


def test_a_reply_still_invalid_after_the_repairs_fails_and_is_not_a_zero(tmp_path: Path):
    with openai_server() as (url, script):
        script.responder = lambda body: "no idea"
        [judgement] = judge_for(url, tmp_path, repair_attempts=2).judge_all([ITEM])
    assert judgement.status == "failed"
    assert judgement.score is None and judgement.semantic_coverage is None
    assert judgement.attempts == 3
    # The second repair repeats the first one word for word, so the response cache answers it.
    assert len(script.chat_requests) == 2
    assert "invalid reply after 3 attempts" in judgement.error
    with pytest.raises(ValueError, match="the judgement of q1 failed: invalid reply"):
        offline_judge().is_correct(judgement)


def test_a_score_off_the_scale_is_invalid(tmp_path: Path):
    with openai_server() as (url, script):
        script.chat_contents = [reply(0.5), reply(0.5)]
        [judgement] = judge_for(url, tmp_path).judge_all([ITEM])
    assert judgement.status == "failed"
    assert '"score" must be one of 0, 0.2, 0.4, 0.6, 0.8, 1, got 0.5' in judgement.error
    assert '"score" must be one of' in script.chat_requests[1]["messages"][-1]["content"]


def test_a_failed_call_is_a_failed_judgement(tmp_path: Path):
    with openai_server() as (url, script):
        script.faults = [(500, {}), (500, {})]
        [judgement] = judge_for(url, tmp_path).judge_all([ITEM])
    assert judgement.status == "failed" and "llm call failed" in judgement.error


def test_budget_is_refused_before_any_request(tmp_path: Path):
    with openai_server() as (url, script):
        judge = judge_for(url, tmp_path, prices={"gpt-4o-mini": Price(1000.0, 1000.0)})
        with pytest.raises(BudgetExceeded, match="exceeds the budget cap"):
            judge.judge_all([ITEM], budget_usd=1e-6)
        assert script.chat_requests == []
    assert judge.last_estimate is not None and judge.last_estimate.cost_usd is not None
    assert judge.last_estimate.cost_usd > 1e-6


def test_a_second_run_is_answered_from_the_cache(tmp_path: Path):
    second = JudgeItem(QuestionId("q2"), "Capital?", "Paris", "Lyon", ())
    with openai_server() as (url, script):
        script.responder = lambda body: reply(0.0 if "Lyon" in body["messages"][-1]["content"] else 1.0)
        first = judge_for(url, tmp_path).judge_all([ITEM, second])
        sent = len(script.chat_requests)
        again_judge = judge_for(url, tmp_path, prices={"gpt-4o-mini": Price(1000.0, 1000.0)})
        again = again_judge.judge_all([ITEM, second], budget_usd=1e-6)  # all cached: nothing to pay
    assert sent == 2 and len(script.chat_requests) == 2
    assert again == first
    assert [j.score for j in again] == [1.0, 0.0]
    assert again_judge.last_estimate is not None and again_judge.last_estimate.n_cached == 2
    assert any("the answer cites no chunk" in r["messages"][-1]["content"] for r in script.chat_requests)


def offline_judge(**kw: Any) -> LLMJudge:
    """A judge whose client can never send anything (an SDK stand-in with no methods)."""
    return LLMJudge(LLMClient(OpenAIChatModel("gpt-4o-mini", client=object())), **kw)


def test_pass_score_decides_correctness():
    judge = offline_judge()
    assert judge.pass_score == 0.6
    assert not offline_judge(pass_score=0.8).is_correct(Judgement(QuestionId("q"), "m", "ok", score=0.6))
    at = Judgement(QuestionId("q"), "m", "ok", score=0.6)
    below = Judgement(QuestionId("q"), "m", "ok", score=0.4)
    assert judge.is_correct(at) and not judge.is_correct(below)


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"score": "1.0"}, '"score" must be a number'),
        ({"score": True}, '"score" must be a number'),
        (
            {"hallucination": {"score": 1.2, "explanation": "x"}},
            '"hallucination.score" must be between 0 and 1',
        ),
        ({"factual_coverage": {"score": -0.1, "explanation": "x"}}, "between 0 and 1, got -0.1"),
        ({"semantic_coverage": {"score": 0.5, "explanation": "  "}}, 'explanation" must be a non-empty'),
        ({"citation_accuracy": 0.5}, '"citation_accuracy" must be an object'),
        ({"citation_accuracy": None}, '"citation_accuracy" must be an object'),
    ],
)
def test_validation_rejects_what_is_not_the_schema(overrides: dict[str, Any], problem: str):
    with pytest.raises(InvalidReply, match=problem):
        validate_verdict(json.loads(reply(**overrides)))


def test_validation_accepts_integers_and_ignores_extra_keys():
    verdict = validate_verdict({**json.loads(reply(1)), "comment": "fine"})
    assert verdict.score == 1.0 and verdict.factual_coverage == Criterion(1.0, "Names Paris.")
    with pytest.raises(InvalidReply, match='"score" is missing'):
        validate_verdict({})
    with pytest.raises(ValueError, match="pass_score"):
        offline_judge(pass_score=1.5)
