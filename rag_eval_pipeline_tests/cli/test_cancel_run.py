"""`rag-eval cancel` of an evaluation that `rag-eval run` executes in process (as from another
terminal): the run executing is interrupted mid-step and ends CANCELED, the runs not started are
recorded CANCELED, no concurrency slot stays claimed, the history holds no half-written file, `status`
says cancelled, and `run --resume` then completes the evaluation."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, PARTITION_TAG
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.defs.answers import assets as answer_assets
from rag_eval_pipeline.runner.cancel import request_cancel, wait_until_ended
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.cli.test_runs import evaluation_id_in

pytestmark = pytest.mark.slow


def slow_first_answers(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The first `answers` step answers slowly (in short sleeps, so an interrupt lands between them): the
    cancel then arrives inside a known step, whatever this machine's speed. The returned event is set
    once that step is answering."""
    answering = threading.Event()
    build = answer_assets.answerer_for

    def answerer_for(*args: Any, **kwargs: Any) -> Any:
        answerer = build(*args, **kwargs)
        if answering.is_set():
            return answerer
        answer_all = answerer.answer_all

        def slow_answer_all(*a: Any, **k: Any) -> Any:
            answering.set()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                time.sleep(0.05)
            return answer_all(*a, **k)

        answerer.answer_all = slow_answer_all
        return answerer

    monkeypatch.setattr(answer_assets, "answerer_for", answerer_for)
    return answering


def test_cancelling_an_evaluation_run_in_process_stops_it_and_resume_completes_it(
    project: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = []
    stamps: dict[str, float] = {}
    answering = slow_first_answers(monkeypatch)

    def cancel_once_an_evaluation_run_starts() -> None:
        """Another terminal: `rag-eval cancel EVALUATION` while its first evaluation run executes."""
        with project_instance(project) as instance:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                started = instance.get_runs(
                    dg.RunsFilter(job_name="evaluation_job", statuses=[dg.DagsterRunStatus.STARTED])
                )
                if started and answering.wait(timeout=0.1):  # inside its answers step
                    stamps["requested"] = time.monotonic()
                    request = request_cancel(instance, started[0].tags[EVALUATION_ID_TAG])
                    requests.append(wait_until_ended(instance, request, timeout_s=120))
                    return
                time.sleep(0.1)

    with project_instance(project):  # its storage exists before two processes' worth of threads open it
        pass
    canceller = threading.Thread(target=cancel_once_an_evaluation_run_starts)
    canceller.start()
    exit_code = main(["run", "--chunk-configs", "fixed-60-0"])
    stamps["ended"] = time.monotonic()
    canceller.join()
    captured = capsys.readouterr()
    evaluation_id = evaluation_id_in(captured.out)

    (request,) = requests
    assert request.kind == "evaluation" and request.status == "cancelled"
    assert [r.action for r in request.runs if r.job_name == "evaluation_job"] == ["cancelling"]
    assert stamps["ended"] - stamps["requested"] < 60  # the step was interrupted, not waited for
    assert exit_code == 1
    assert f"CANCELLED: evaluation {evaluation_id} was cancelled" in captured.err
    assert (
        f"evaluation {evaluation_id}: 5 runs planned, 3 ran (2 succeeded, 0 failed, 1 cancelled), 0 not run, "
        "2 cancelled before they started"
    ) in captured.out

    with project_instance(project) as instance:
        runs = {
            (r.job_name, r.tags.get(PARTITION_TAG, "")): r
            for r in instance.get_runs(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id}))
        }
        assert {key: run.status for key, run in runs.items()} == {
            ("ingestion_job", ""): dg.DagsterRunStatus.SUCCESS,
            ("chunking_job", "fixed-60-0"): dg.DagsterRunStatus.SUCCESS,
            ("evaluation_job", "fixed-60-0|top2"): dg.DagsterRunStatus.CANCELED,
            ("evaluation_job", "fixed-60-0|top4"): dg.DagsterRunStatus.CANCELED,  # never started
            ("leaderboard_job", ""): dg.DagsterRunStatus.CANCELED,
        }
        cancelled = runs[("evaluation_job", "fixed-60-0|top2")].run_id
        materialized = {
            record.event_log_entry.dagster_event.asset_key.path[-1]  # type: ignore[union-attr]
            for record in instance.get_records_for_run(
                cancelled, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
            ).records
        }
        assert "retrieval_results" in materialized
        assert not materialized & {"answers", "answer_metrics"}  # stopped inside its answers step
        storage = instance.event_log_storage
        assert all(
            not storage.get_concurrency_info(pool).claimed_slots for pool in storage.get_concurrency_keys()
        )
    warehouse = Warehouse.in_project(project)
    assert not [p for p in warehouse.base_dir.rglob("*") if p.name.startswith(".")]  # no half-written file
    assert warehouse.read_current("leaderboard") is None  # no leaderboard from a cancelled evaluation

    assert main(["status", evaluation_id]) == 0
    status = capsys.readouterr().out
    assert "status: cancelled (cancel requested " in status and "2 succeeded, 3 cancelled" in status
    assert main(["list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    row = next(line for line in listed if line.startswith(evaluation_id)).split()
    assert row[-6:-4] == ["3", "cancelled"]  # cancelled runs, status

    assert main(["run", "--resume", evaluation_id]) == 0
    resumed = capsys.readouterr().out
    assert "3 runs planned, 3 ran (3 succeeded, 0 failed), 0 not run" in resumed
    assert warehouse.read_current("leaderboard") is not None
