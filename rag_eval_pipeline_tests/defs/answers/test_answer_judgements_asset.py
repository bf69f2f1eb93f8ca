"""The answer_judgements asset run with frames: the judge (an OpenAI-protocol server on localhost that
always replies with one judgement) sees the answers of the top pair by semantic similarity only; a pair
whose chunk config is no longer configured is left out however good it was; without a judge nothing is
judged and the ranking still shows."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from rag_eval_pipeline.core.answers.judge import SYSTEM_PROMPT as JUDGE_PROMPT
from rag_eval_pipeline.defs.answers.assets import answer_judgements
from rag_eval_pipeline.lib.resources import LLMResource
from rag_eval_pipeline_tests.conftest import TINY_ANSWERS
from rag_eval_pipeline_tests.defs.conftest import hashing_resources
from rag_eval_pipeline_tests.defs.frames import run_with_frames
from rag_eval_pipeline_tests.openai_server import openai_server

JUDGEMENT = {
    "score": 0.8,
    "semantic_coverage": {"score": 0.9, "explanation": "covers the reference"},
    "factual_coverage": {"score": 0.8, "explanation": "the facts match"},
    "hallucination": {"score": 0.0, "explanation": "nothing invented"},
    "citation_accuracy": {"score": 1.0, "explanation": "the cited chunk says it"},
}
# (chunk config, profile) -> each question's semantic similarity; "gone-9" is in no config file
PAIRS = {
    ("fixed-60-0", "top2"): [0.9, 0.8],  # mean 0.85: the best configured pair
    ("fixed-60-0", "top4"): [0.6, 0.7],
    ("gone-9", "top2"): [1.0, 1.0],  # the best of all, but removed
}
QUESTIONS = ["tiny-1", "tiny-3"]


def metrics_frame(pair: tuple[str, str], similarity: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": QUESTIONS,
            "semantic_similarity": similarity,
            "semantic_similarity_status": "ok",
            "chunk_config": pair[0],
            "profile": pair[1],
            "answers_run_id": f"answers-{pair[0]}-{pair[1]}",
        }
    )


def answers_frame(pair: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": QUESTIONS,
            "query": ["How fast does the main pump run?", "Who leads the night shift?"],
            "reference_answer": [TINY_ANSWERS[q][0] for q in QUESTIONS],
            "answer": ["It runs at 1,450 rpm [chunk_000000000001].", "Zoë Mbeki [chunk_000000000002]."],
            "cited_chunk_ids": [["chunk_000000000001"], ["chunk_000000000002"]],
            "cited_texts": [["The main pump runs at 1,450 rpm"], ["Zoë Mbeki leads the night shift."]],
            "status": "ok",
            "chunk_config": pair[0],
            "profile": pair[1],
            "run_id": f"answers-{pair[0]}-{pair[1]}",
        }
    )


def inputs() -> dict[str, object]:
    return {
        "answer_metrics": {f"{c}|{p}": metrics_frame((c, p), s) for (c, p), s in PAIRS.items()},
        "answers": {f"{c}|{p}": answers_frame((c, p)) for c, p in PAIRS},
    }


def test_the_judge_sees_the_best_configured_pair_only(tiny_project: Path, tmp_path: Path):
    (tiny_project / "data/answer_evaluation.yaml").write_text("judge:\n  top_n: 1\n", encoding="utf-8")
    (tiny_project / "data/generation.yaml").write_text(
        "llm:\n  requests_per_minute: null\n  max_attempts: 2\n  budget_usd: 2.0\n", encoding="utf-8"
    )
    with openai_server() as (url, script):
        script.responder = lambda body: json.dumps(JUDGEMENT)
        resources = {
            **hashing_resources(tiny_project, tmp_path),
            "llm": LLMResource(
                openai_api_key="sk-test", openai_base_url=url, cache_path=str(tmp_path / "llm.sqlite")
            ),
        }
        frame, metadata = run_with_frames(answer_judgements, inputs(), resources)
        requests = script.chat_requests

    assert [r["messages"][0]["content"] for r in requests] == [JUDGE_PROMPT] * len(QUESTIONS)
    assert all(r["temperature"] == 0 for r in requests)
    assert set(zip(frame["chunk_config"], frame["profile"], strict=True)) == {("fixed-60-0", "top2")}
    assert sorted(frame["question_id"]) == QUESTIONS and (frame["status"] == "ok").all()
    assert (frame["score"] == 0.8).all() and set(frame["answers_run_id"]) == {"answers-fixed-60-0-top2"}
    assert metadata["pairs_judged"] == "fixed-60-0 x top2" and metadata["pairs_removed"] == "gone-9 x top2"
    assert metadata["n_judged"] == len(QUESTIONS) and metadata["n_failed"] == 0
    ranking = str(metadata["ranking"])
    assert ranking.index("fixed-60-0 | top2") < ranking.index("fixed-60-0 | top4") and "gone-9" not in ranking
    assert "0.850" in ranking and "0.650" in ranking


def test_without_a_judge_nothing_is_judged_and_the_ranking_still_shows(tiny_project: Path, tmp_path: Path):
    frame, metadata = run_with_frames(answer_judgements, inputs(), hashing_resources(tiny_project, tmp_path))

    assert frame.empty and {"question_id", "score", "status", "chunk_config", "profile"} <= set(frame.columns)
    assert metadata["pairs_judged"] == "none" and metadata["n_judged"] == 0
    assert "fixed-60-0 | top2" in str(metadata["ranking"])
