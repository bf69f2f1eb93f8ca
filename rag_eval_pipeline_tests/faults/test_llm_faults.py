"""LLM replies the SDK does not expect, and servers that echo the API key, through the public entry points.

- Broken 200 replies (truncated JSON, a gateway's HTML page, an empty body) are retried and counted; a
  question whose replies are always broken keeps failed rows with the reason, and every step succeeds.
- A 401 that quotes the bearer key: the key reaches no file of the project (tables, datasets, the event
  log, compute logs), no metadata, no event-log message and not the terminal; the marker stands in.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.answers.judge import SYSTEM_PROMPT as JUDGE_PROMPT
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.lib.resources import LLMResource
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.conftest import latest_metadata, tiny_resources
from rag_eval_pipeline_tests.defs.answers.test_answer_assets import current, llm_project, scripted
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.faults.entry_points import rag_eval
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.openai_server import (
    EMPTY_BODY,
    HTML_PAGE,
    TRUNCATED_JSON,
    EchoKey,
    Fault,
    openai_server,
)

pytestmark = pytest.mark.slow

PAIR = dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"})
ALWAYS_BROKEN = "Which valve feeds the cooling loop"  # tiny-4: every reply about it is an HTML page
BROKEN_JUDGE = "How fast does the main pump run?"  # tiny-1: every judgement of it is truncated JSON
BROKEN_ONCE = {"When does the pressure alarm fire?": EMPTY_BODY, "Who leads the night shift": TRUNCATED_JSON}


class BrokenGateway:
    """Which chat requests get a broken 200 reply: some always, some only the first time they are sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._broken_once: set[str] = set()

    def __call__(self, body: dict[str, Any]) -> Fault | None:
        last = str(body["messages"][-1]["content"])
        if ALWAYS_BROKEN in last:
            return HTML_PAGE
        if body["messages"][0]["content"] == JUDGE_PROMPT:
            return TRUNCATED_JSON if BROKEN_JUDGE in last else None
        for question, fault in BROKEN_ONCE.items():
            if last.rstrip().endswith(question) or f"Question: {question}" in last:
                with self._lock:
                    if question not in self._broken_once:
                        self._broken_once.add(question)
                        return fault
        return None


def test_broken_replies_are_retried_and_always_broken_ones_keep_failed_rows(
    tiny_project: Path, tmp_path: Path
):
    llm_project(tiny_project)
    with openai_server() as (url, script), instance_for_tests() as instance:
        script.responder = scripted
        script.fault_for = BrokenGateway()
        resources = {
            **tiny_resources(tiny_project, tmp_path),
            "llm": LLMResource(
                openai_api_key="sk-test", openai_base_url=url, cache_path=str(tmp_path / "llm.sqlite")
            ),
        }
        board, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top2"],
            resources=resources,
            show_progress=False,
        )
        assert failures == [] and board is not None  # every step succeeded
        answers_meta = latest_metadata(instance, "answers", PAIR)
        judgements_meta = latest_metadata(instance, "answer_judgements")
        calibration = latest_metadata(instance, "answer_calibration")

    answers = current(tmp_path / "warehouse", "answers").set_index("question_id")
    assert sorted(answers.index) == ["tiny-1", "tiny-2", "tiny-3", "tiny-4"]  # no row lost
    failed = answers.loc["tiny-4"]
    assert failed["status"] == "failed" and failed["answer"] == ""
    assert failed["error"].startswith(
        "llm call failed: gave up after 2 attempts: malformed reply: not a chat"
    )
    assert "Bad gateway" in failed["error"]
    # the replies broken once were retried and answered
    assert (answers.drop(index="tiny-4")["status"] == "ok").all()
    assert answers_meta["n_failed"] == 1 and answers_meta["llm_failures"] == 1
    assert answers_meta["llm_retries"] == 3  # tiny-2 and tiny-3 once each, tiny-4 once before giving up
    assert str(answers_meta["first_failure"]).startswith("tiny-4: llm call failed")

    metrics = current(tmp_path / "warehouse", "answer_metrics").set_index("question_id")
    assert len(metrics) == 4 and metrics.loc["tiny-4", "keyword_status"] == "skipped"
    assert "malformed reply" in metrics.loc["tiny-4", "keyword_detail"]

    judged = pd.read_parquet(Warehouse(tmp_path / "warehouse").current_path("answer_judgements")).set_index(
        "question_id"
    )
    pump = judged.loc["tiny-1"]
    assert pump["status"] == "failed" and pd.isna(pump["score"])  # failed, never a 0
    assert "malformed reply: the body is not valid JSON" in pump["error"]
    assert judged.loc["tiny-2", "status"] == "ok" and judged.loc["tiny-2", "score"] == pytest.approx(0.8)
    assert judgements_meta["n_failed"] == 2  # tiny-1 broken, tiny-3 unparseable (see `scripted`)
    assert judgements_meta["llm_failures"] == 1 and judgements_meta["llm_retries"] == 1  # tiny-1's calls

    # the judge on the labels: the 4 labels of tiny-1 and 2 of tiny-4 failed, the other 6 count
    assert calibration["llm_failures"] == 6 and calibration["llm_retries"] == 6
    assert calibration["threshold_how"] == "fitted" and "llm_judge_accuracy" in calibration


KEY = "sk-proj-Zq81LmXv3Rt9Wn5Bc7Kd2Hf6Jp4Gs0Ye1Ua8Oi"
MARK = "[redacted OPENAI_API_KEY]"


def test_a_key_echoed_by_the_server_is_redacted_everywhere(
    tiny_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    llm_project(tiny_project)
    generation = tiny_project / "data/generation.yaml"
    generation.write_text(
        "evaluate_on: golden\ntoken_level: {generator: llm}\n" + generation.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    with openai_server() as (url, script):
        script.fault_for = lambda body: EchoKey()
        done = rag_eval(
            tiny_project,
            "run",
            "--chunk-configs",
            "fixed-60-0",
            "--profiles",
            "top2",
            env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url},
        )
        # the evaluation uses only the golden set, so the run skipped synthetic_questions: generate them
        regenerated = rag_eval(
            tiny_project, "regenerate-questions", env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url}
        )
        echoed = len(script.chat_requests)
    terminal = done.stdout + done.stderr + regenerated.stdout + regenerated.stderr
    assert done.returncode == 0 and regenerated.returncode == 0, terminal
    assert echoed > 0 and set(script.auth_headers) == {f"Bearer {KEY}"}  # the server did see the key
    # a partial echo counts too: no 12 characters of the key anywhere
    leaks = (KEY, KEY[:12], KEY[-12:])

    assert not any(leak in terminal for leak in leaks)
    assert f"Incorrect API key provided: {MARK}" in done.stderr  # the failure reason, redacted

    for path in tiny_project.rglob("*"):  # tables, datasets, event log, compute logs, caches
        if path.is_file():
            raw = path.read_bytes()
            assert not any(leak.encode() in raw for leak in leaks), path
    warehouse = Warehouse.in_project(tiny_project, {})  # rag_eval's environment does not move it
    # Parquet compresses: look at the values too, in every table file (each current file is a copy of one)
    for path in warehouse.history_files():
        text = [str(value) for value in pd.read_parquet(path).to_numpy().ravel()]
        assert not any(leak in cell for cell in text for leak in leaks), path
    rejected = pd.read_parquet(warehouse.current_path("synthetic_questions"))
    assert (
        len(rejected)
        and (rejected["status"] == "rejected").all()
        and rejected["detail"].str.contains(MARK, regex=False).all()
    )
    assert current(warehouse.base_dir, "answers")["error"].str.contains(MARK, regex=False).all()

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tiny_project)
    with project_instance(tiny_project) as instance:
        runs = instance.get_runs()
        entries = [entry for run in runs for entry in instance.all_logs(run.run_id)]
        answers_meta = latest_metadata(instance, "answers", PAIR)
    assert len(runs) == 4 + 1 and entries  # the evaluation's, and regenerate-questions'
    for entry in entries:  # messages, metadata, step failures: everything the instance stored
        stored = entry.user_message + (dg.serialize_value(entry.dagster_event) if entry.dagster_event else "")
        assert not any(leak in stored for leak in leaks)
    assert MARK in str(answers_meta["first_failure"])
    assert any(MARK in entry.user_message for entry in entries)
