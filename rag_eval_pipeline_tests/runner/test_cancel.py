"""Cancelling on a real Dagster instance: a run this process executes notices the request (CANCELING),
is interrupted mid-step, ends CANCELED with its concurrency slot freed; a run whose process is gone is
cancelled on the spot; a process between two runs sees an evaluation's request, and an older request
does not stop a resume. (A queued and a started run of `dagster dev`: test_graphql_api.py; a whole
evaluation `rag-eval run` executes: cli/test_cancel_run.py.)"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.runs.processes import ProcessIdentity
from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, PROCESS_TAG
from rag_eval_pipeline.runner.cancel import (
    CancelWatch,
    evaluation_cancelled_since,
    request_cancel,
    wait_until_ended,
)
from rag_eval_pipeline.runner.in_process import process_tags
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.runner.runs import partition, started_run

POOLS = {"concurrency": {"pools": {"default_limit": 1}}}
EVALUATION = "20260101-000000-cncl"
STEP_STARTED = threading.Event()
STEP_FINISHED = threading.Event()


@dg.op(pool="llm")
def long_llm_step() -> None:
    """Holds the pool's one slot for up to a minute, as a slow LLM step would."""
    STEP_STARTED.set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
    STEP_FINISHED.set()


@dg.job
def llm_job() -> None:
    long_llm_step()


def claimed(instance: dg.DagsterInstance) -> list[str]:
    return [s.run_id for s in instance.event_log_storage.get_concurrency_info("llm").claimed_slots]


def test_a_run_executed_here_is_interrupted_mid_step_and_ends_cancelled_with_its_slot_freed() -> None:
    STEP_STARTED.clear()
    STEP_FINISHED.clear()
    run_id = str(uuid.uuid4())
    with instance_for_tests(overrides=POOLS) as instance:
        requests = []

        def cancel_once_the_step_runs() -> None:
            assert STEP_STARTED.wait(60)
            assert claimed(instance) == [run_id]  # the step holds the pool's slot
            requests.append(request_cancel(instance, run_id))

        canceller = threading.Thread(target=cancel_once_the_step_runs)
        canceller.start()
        watch = CancelWatch(instance, run_id, interval_s=0.1)
        started = time.monotonic()
        with watch.watching():
            result = llm_job.execute_in_process(
                instance=instance, run_id=run_id, tags=process_tags(), raise_on_error=False
            )
        canceller.join()
        elapsed = time.monotonic() - started
        (request,) = requests
        assert [r.action for r in request.runs] == ["cancelling"]
        assert watch.fired and not STEP_FINISHED.is_set() and elapsed < 30  # stopped mid-step
        assert not result.success
        final = wait_until_ended(instance, request, timeout_s=30)
        assert final.status == "cancelled" and final.runs[0].status == "CANCELED"
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.CANCELED  # type: ignore[union-attr]
        assert claimed(instance) == []  # its slot is free for the next run


def test_a_run_whose_process_is_gone_is_cancelled_on_the_spot() -> None:
    me = ProcessIdentity.current()
    gone = dataclasses.replace(me, start_ticks=str(int(me.start_ticks) - 1)).to_text()
    with instance_for_tests(overrides=POOLS) as instance:
        run = started_run(instance, "evaluation_job", {PROCESS_TAG: gone, **partition("a|p")})
        instance.event_log_storage.set_concurrency_slots("llm", 1)
        assert instance.event_log_storage.claim_concurrency_slot("llm", run.run_id, "answers").is_claimed
        request = request_cancel(instance, run.run_id)
        assert [r.action for r in request.runs] == ["cancelled"]
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.CANCELED  # type: ignore[union-attr]
        assert claimed(instance) == []


def test_a_process_between_two_runs_sees_its_evaluations_request_but_not_an_older_one() -> None:
    with instance_for_tests() as instance:
        run = started_run(instance, "chunking_job", {EVALUATION_ID_TAG: EVALUATION, **process_tags()})
        assert evaluation_cancelled_since(instance, EVALUATION, datetime.now(UTC)) == ""
        before_request = datetime.now(UTC) - timedelta(seconds=1)
        request = request_cancel(instance, EVALUATION)
        assert request.status == "cancelling"  # this process executes it: it must notice
        assert evaluation_cancelled_since(instance, EVALUATION, before_request) == request.requested
        resumed_at = datetime.now(UTC) + timedelta(seconds=2)  # a resume started after the request
        assert evaluation_cancelled_since(instance, EVALUATION, resumed_at) == ""
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.CANCELING  # type: ignore[union-attr]


def test_cancel_of_an_unknown_ref_exits_2(
    tiny_project: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from rag_eval_pipeline.cli import main

    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tiny_project))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tiny_project)
    assert main(["cancel", "eval-nope"]) == 2
    assert "no run and no evaluation matches 'eval-nope'" in capsys.readouterr().err
    assert main(["cancel", "eval-nope", "--wait", "-1"]) == 2
    assert "--wait takes a number of seconds >= 0" in capsys.readouterr().err


def test_a_cancelling_run_whose_process_died_is_marked_cancelled_not_failed() -> None:
    from rag_eval_pipeline.runner.run_status import fail_orphaned_runs

    me = ProcessIdentity.current()
    gone = dataclasses.replace(me, start_ticks=str(int(me.start_ticks) - 1)).to_text()
    with instance_for_tests() as instance:
        run = started_run(instance, "evaluation_job", {PROCESS_TAG: gone, **partition("a|p")})
        instance.report_run_canceling(run, message="rag-eval cancel")
        (orphan,) = fail_orphaned_runs(instance)
        assert "marked the run cancelled" in orphan.message
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.CANCELED  # type: ignore[union-attr]


def test_a_request_that_marks_a_run_cancelling_just_after_it_ended_still_ends_it(
    tiny_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race an HTTP cancel met: the request read the run unfinished, the run succeeded, then the
    request marked it CANCELING. The process that executed it ends it CANCELED and stops the evaluation;
    no run stays CANCELING."""
    from rag_eval_pipeline.core.runs.run_tags import CANCEL_TAG
    from rag_eval_pipeline.runner import in_process
    from rag_eval_pipeline_tests.conftest import tiny_resources
    from rag_eval_pipeline_tests.evaluations import evaluate_here

    real = in_process.execute_in_process
    late: list[str] = []

    def then_a_late_request(job: dg.JobDefinition, **kwargs: object) -> dg.ExecuteInProcessResult:
        result = real(job, **kwargs)
        if not late:  # the first run: it ended, then the request arrives
            instance = kwargs["instance"]
            assert isinstance(instance, dg.DagsterInstance) and result.success
            run = instance.get_run_by_id(result.run_id)
            assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
            instance.report_run_canceling(run, message="cancelled by `rag-eval cancel` (late)")
            instance.add_run_tags(result.run_id, {CANCEL_TAG: f"{datetime.now(UTC).isoformat()} by test"})
            late.append(result.run_id)
        return result

    monkeypatch.setattr(in_process, "execute_in_process", then_a_late_request)
    with instance_for_tests() as instance:
        outcome = evaluate_here(instance, resources=tiny_resources(tiny_project, tmp_path / "work"))
        (first,) = late
        assert instance.get_run_by_id(first).status == dg.DagsterRunStatus.CANCELED  # type: ignore[union-attr]
        statuses = {r.status for r in instance.get_runs()}
        assert dg.DagsterRunStatus.CANCELING not in statuses, statuses
        states = [o.state for o in outcome.runs]
        assert states[0] == "cancelled" and "succeeded" not in states, states  # the evaluation stopped


def test_a_request_that_read_a_run_unfinished_and_marks_it_after_it_ended_ends_it_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other side of that race: the run's process saw it succeed and moved on before the request's
    mark landed, so nobody would end it. The request sees the run's end in its event log and ends it."""

    @dg.op
    def step() -> None:
        pass

    @dg.job
    def job() -> None:
        step()

    with instance_for_tests() as instance:
        run_id = job.execute_in_process(instance=instance, tags=process_tags()).run_id
        ended = instance.get_run_by_id(run_id)
        assert ended is not None and ended.status == dg.DagsterRunStatus.SUCCESS
        real = instance.get_run_by_id
        reads: list[str] = []

        def stale_first(run_id: str) -> dg.DagsterRun | None:  # what the request read before the end
            found = real(run_id)
            reads.append(run_id)
            if len(reads) <= 2 and found is not None:
                return found.with_status(dg.DagsterRunStatus.STARTED)
            return found

        monkeypatch.setattr(instance, "get_run_by_id", stale_first)
        (cancelled,) = request_cancel(instance, run_id).runs
        monkeypatch.undo()
        assert cancelled.action == "cancelled"
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.CANCELED  # type: ignore[union-attr]
