"""Answer evaluation through Dagster: offline extractive answers, and an OpenAI-protocol LLM that
answers, judges the top pairs and checks recall only where the heuristic escalates."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow.dataset as ds
import pytest

from rag_eval_pipeline.core.answers.answering import ANSWER_FORMAT_INSTRUCTION
from rag_eval_pipeline.core.answers.judge import SYSTEM_PROMPT as JUDGE_PROMPT
from rag_eval_pipeline.core.answers.recall import RECALL_JUDGE_PROMPT
from rag_eval_pipeline.core.significant_digits import significant
from rag_eval_pipeline.core.store.warehouse import ANSWER_SUMMARY, Warehouse
from rag_eval_pipeline.lib.io_managers import read_current_leaderboard
from rag_eval_pipeline.lib.resources import LLMResource
from rag_eval_pipeline_tests.conftest import TinyRunFactory, latest_metadata, tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.openai_server import openai_server

pytestmark = pytest.mark.slow

PAIR = dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"})


def current(
    warehouse: Path, table: str, chunk_config: str = "fixed-60-0", profile: str = "top2"
) -> pd.DataFrame:
    return pd.read_parquet(
        Warehouse(warehouse).current_path(table, {"chunk_config": chunk_config, "profile": profile})
    )


def test_offline_answers_are_extractive_and_every_table_has_its_answer_columns(tiny_run: TinyRunFactory):
    run = tiny_run()  # evaluated over every partition, without failures
    warehouse = run.work / "warehouse"
    board = read_current_leaderboard(run.resources())  # what the evaluation left
    assert board is not None
    with run.instance() as instance:
        calibration = latest_metadata(instance, "answer_calibration")
        answers_meta = latest_metadata(instance, "answers", PAIR)
        metrics_meta = latest_metadata(instance, "answer_metrics", PAIR)
        judgements_meta = latest_metadata(instance, "answer_judgements")

    # the threshold is fitted on the project's 12 human labels, and the reason says so
    assert (
        calibration["threshold_how"] == "fitted" and "12 labelled answers" in calibration["threshold_reason"]
    )
    assert {"keyword_accuracy", "semantic_fixed_kappa", "semantic_dynamic_accuracy"} <= set(calibration)
    assert "llm_judge_accuracy" not in calibration  # no judge offline

    answers = current(warehouse, "answers")
    assert answers_meta["answerer"].startswith("extractive:") and answers_meta["n_failed"] == 0
    assert (answers["status"] == "ok").all()
    for _, row in answers.iterrows():  # every answer quotes a retrieved chunk and cites it
        assert not row["abstained"] and len(row["cited_chunk_ids"]) >= 1
        assert row["cited_texts"][0] in set(current(warehouse, "retrieval_results")["text"])

    metrics = current(warehouse, "answer_metrics")
    assert len(metrics) == 4 and (metrics["threshold"] == calibration["threshold"]).all()
    assert set(metrics["keyword"].dropna()) <= {0.0, 1.0}
    assert (metrics["hybrid_status"] == "skipped").all()  # no judge: honest, not degraded to semantic
    assert (metrics["context_recall_llm_status"] == "skipped").all()
    escalated = metrics["escalated"].astype(bool)
    assert metrics_meta["n_escalated"] == int(escalated.sum()) and metrics_meta["calls_avoided"] == int(
        (~escalated).sum()
    )
    assert metrics.loc[escalated, "context_recall_llm_detail"].str.contains("no LLM configured").all()
    assert set(metrics["semantic_validation"]) <= {"pass", "fail", "skipped"}
    # the means as the UI shows them: four significant digits, as the stored threshold is compared
    assert metrics_meta["semantic_similarity"] == significant(metrics["semantic_similarity"].mean())
    assert metrics_meta["threshold"] == significant(calibration["threshold"])
    for name in ("keyword_accuracy", "semantic_fixed_kappa", "semantic_dynamic_accuracy"):
        assert calibration[name] == significant(calibration[name]), name

    history = ds.dataset(
        Warehouse(warehouse).history_table_dir(ANSWER_SUMMARY), format="parquet", partitioning="hive"
    )
    summary = history.to_table().to_pandas()
    assert len(summary) == 4 and {"keyword_mean", "escalated_fraction", "threshold_reason"} <= set(
        summary.columns
    )

    assert judgements_meta["pairs_judged"] == "none" and judgements_meta["n_judged"] == 0
    for column in ("keyword_mean", "semantic_dynamic_mean", "context_relevance_mean", "grounded_rate"):
        assert board[column].notna().all(), column
    assert board["llm_judge_mean"].isna().all() and (board["answerer"].str.startswith("extractive:")).all()


def test_a_metric_that_breaks_on_one_row_fails_only_that_row(tiny_project: Path, tmp_path: Path):
    dataset = tiny_project / "data/datasets/golden_token_level.jsonl"
    lines = [json.loads(line) for line in dataset.read_text(encoding="utf-8").splitlines()]
    lines[0]["outputs"]["expected_keywords"] = ["%"]  # no letter or digit: the keyword matcher refuses it
    dataset.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    with instance_for_tests() as instance:
        _, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top2"],
            resources=tiny_resources(tiny_project, tmp_path),
            show_progress=False,
        )
        assert failures == []
        assert latest_metadata(instance, "answer_metrics", PAIR)["keyword_n_failed"] == 1
    metrics = current(tmp_path / "warehouse", "answer_metrics").set_index("question_id")
    assert metrics.loc["tiny-1", "keyword_status"] == "failed" and pd.isna(metrics.loc["tiny-1", "keyword"])
    assert (metrics.drop(index="tiny-1")["keyword_status"] == "ok").all()
    assert (metrics["semantic_similarity_status"] == "ok").all()


# Scripted LLM: answers per question (with citations), judgements, recall checks.
ANSWERS = {
    "How fast does the main pump run?": "The main pump runs at 1,450 rpm [{0}].\nConfidence: HIGH",
    "When does the pressure alarm fire?": "I don't know.\nConfidence: LOW",
    "Who leads the night shift and when does it start?": (
        "Zoë Mbeki leads the night shift from 22:00 [{0}][chunk_deadbeef0000].\nConfidence: MEDIUM"
    ),
    "Which valve feeds the cooling loop, and who leads maintenance?": (
        "Valve V-12 feeds the cooling loop [{0}] and Amélie Durand leads maintenance.\nConfidence: HIGH"
    ),
}
JUDGEMENT = {
    "score": 0.8,
    "semantic_coverage": {"score": 0.9, "explanation": "covers the reference"},
    "factual_coverage": {"score": 0.8, "explanation": "the facts match"},
    "hallucination": {"score": 0.0, "explanation": "nothing invented"},
    "citation_accuracy": {"score": 1.0, "explanation": "the cited chunk says it"},
}


def scripted(body: dict[str, Any]) -> str:
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system == JUDGE_PROMPT:
        # the night-shift question never gets a usable judgement, not even after the repair prompt
        return (
            "I would rather not say"
            if "night shift" in str(body["messages"][1]["content"])
            else json.dumps(JUDGEMENT)
        )
    if system == RECALL_JUDGE_PROMPT:
        return json.dumps({"recall": 0.5, "missing": "the exact figure"})
    assert ANSWER_FORMAT_INSTRUCTION in system
    ids = re.findall(r"\[((?:pa_)?chunk_[0-9a-f]{12})\]", user)
    question = user.rsplit("Question:", 1)[-1].strip()
    return ANSWERS[question].format(*ids)


def llm_project(project: Path, budget: float = 2.0) -> None:
    (project / "data/generation.yaml").write_text(
        f"llm:\n  requests_per_minute: null\n  max_attempts: 2\n  budget_usd: {budget:.8f}\n",
        encoding="utf-8",
    )
    (project / "data/answer_evaluation.yaml").write_text("judge:\n  top_n: 1\n", encoding="utf-8")


def requests_by_kind(chat_requests: list[dict[str, Any]]) -> dict[str, int]:
    kinds = {"judge": 0, "recall": 0, "answer": 0}
    for body in chat_requests:
        system = body["messages"][0]["content"]
        kinds[
            "judge" if system == JUDGE_PROMPT else "recall" if system == RECALL_JUDGE_PROMPT else "answer"
        ] += 1
    return kinds


def test_an_llm_answers_judges_the_top_pair_only_and_checks_recall_only_when_escalated(
    tiny_project: Path, tmp_path: Path
):
    llm_project(tiny_project)
    warehouse = tmp_path / "warehouse"
    with openai_server() as (url, script), instance_for_tests() as instance:
        script.responder = scripted
        resources = {
            **tiny_resources(tiny_project, tmp_path),
            "llm": LLMResource(
                openai_api_key="sk-test", openai_base_url=url, cache_path=str(tmp_path / "llm.sqlite")
            ),
        }
        board, failures = evaluate_board(instance, resources=resources, show_progress=False)
        assert failures == [] and board is not None
        calibration = latest_metadata(instance, "answer_calibration")
        judgements_meta = latest_metadata(instance, "answer_judgements")
        escalated = sum(
            latest_metadata(
                instance, "answer_metrics", dg.MultiPartitionKey({"chunk_config": c, "profile": p})
            )["n_escalated"]
            for c in ("fixed-60-0", "recursive-120-20")
            for p in ("top2", "top4")
        )
        for request in script.chat_requests:
            assert request["temperature"] == 0
        kinds = requests_by_kind(script.chat_requests)

    answers = current(warehouse, "answers").set_index("question_id")
    assert answers["answerer"].str.startswith("openai:gpt-4o-mini@127.0.0.1:").all()
    assert answers.loc["tiny-2", "abstained"] and list(answers.loc["tiny-3", "invalid_citations"]) == [
        "chunk_deadbeef0000"
    ]
    assert (
        answers.loc["tiny-1", "confidence"] == "HIGH" and len(answers.loc["tiny-1", "cited_chunk_ids"]) == 1
    )

    metrics = current(warehouse, "answer_metrics").set_index("question_id")
    assert metrics.loc["tiny-2", "keyword"] == 0.0 and metrics.loc["tiny-1", "keyword"] == 1.0  # no 0.5 floor
    assert set(metrics["hybrid_detail"].dropna()) <= {"semantic", "judge"}
    assert metrics["judge_model"].str.startswith("openai:gpt-4o-mini@").all()
    flagged = metrics["escalated"].astype(bool)
    assert (metrics.loc[flagged, "context_recall_llm"] == 0.5).all()
    assert (metrics.loc[~flagged, "context_recall_llm_status"] == "skipped").all()
    # every recall request went to an escalated question, and never the same question twice
    assert kinds["recall"] == escalated < 16

    # llm_judge and hybrid are measured against the labels too
    assert {"llm_judge_accuracy", "hybrid_accuracy"} <= set(calibration)

    judged = pd.read_parquet(Warehouse(warehouse).current_path("answer_judgements"))
    best = board.sort_values("semantic_similarity_mean", ascending=False, kind="stable").iloc[0]
    assert judgements_meta["pairs_judged"].count(" x ") == 1
    assert set(zip(judged["chunk_config"], judged["profile"], strict=True)) == {
        (best["chunk_config"], best["profile"])
    }
    night = judged.set_index("question_id").loc["tiny-3"]
    assert night["status"] == "failed" and pd.isna(night["score"]) and "invalid reply" in night["error"]
    assert (judged.loc[judged["status"] == "ok", "score"] == 0.8).all()
    assert judgements_meta["n_failed"] == 1 and "planned requests" in judgements_meta["llm_estimate"]
    judged_pair = (board["chunk_config"] == best["chunk_config"]) & (board["profile"] == best["profile"])
    assert board.loc[judged_pair, "llm_judge_mean"].iloc[0] == pytest.approx(0.8)
    assert board.loc[judged_pair, "llm_judge_failed"].iloc[0] == 1
    assert board.loc[~judged_pair, "llm_judge_mean"].isna().all()


def test_the_budget_cap_refuses_before_any_request(tiny_project: Path, tmp_path: Path):
    llm_project(tiny_project, budget=1e-7)
    with openai_server() as (url, script), instance_for_tests() as instance:
        resources = {
            **tiny_resources(tiny_project, tmp_path),
            "llm": LLMResource(
                openai_api_key="sk-test", openai_base_url=url, cache_path=str(tmp_path / "llm.sqlite")
            ),
        }
        _, failures = evaluate_board(instance, resources=resources, show_progress=False)
        assert len(failures) == 1 and "budget cap" in failures[0] and "answer_calibration" in failures[0]
        assert script.chat_requests == []
