"""Concurrency slots on a real instance: an ended run's slot is freed when `rag-eval run` starts (a live
run keeps its own), and a step waiting for a pool says so, naming the pool, the holder and the way out."""

import dataclasses
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.runs.processes import ProcessIdentity
from rag_eval_pipeline.core.runs.run_tags import PROCESS_TAG
from rag_eval_pipeline.runner.in_process import execute_plan
from rag_eval_pipeline.runner.plan import EvaluationRequest
from rag_eval_pipeline.runner.pools import pool_wait_notices, release_stale_slots
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.runner.runs import partition, started_run

POOLS = {"concurrency": {"pools": {"default_limit": 1}}}


def holding(
    instance: dg.DagsterInstance, status: dg.DagsterRunStatus, tags: dict[str, str] | None = None
) -> str:
    """A run in ``status`` that holds a slot of the pool "llm" for its step `answers`."""
    run = started_run(instance, "evaluation_job", {**partition("a|p"), **(tags or {})})
    if status != dg.DagsterRunStatus.STARTED:
        instance.handle_run_event(run.run_id, _status_event(run, status))
    storage = instance.event_log_storage
    if "llm" not in storage.get_concurrency_keys():  # as the first step with the pool sets it up
        storage.set_concurrency_slots("llm", 1)
    claim = storage.claim_concurrency_slot("llm", run.run_id, "answers")
    assert claim.is_claimed
    return run.run_id


def _status_event(run: dg.DagsterRun, status: dg.DagsterRunStatus) -> dg.DagsterEvent:
    event_type = {
        dg.DagsterRunStatus.CANCELED: dg.DagsterEventType.RUN_CANCELED,
        dg.DagsterRunStatus.FAILURE: dg.DagsterEventType.RUN_FAILURE,
        dg.DagsterRunStatus.SUCCESS: dg.DagsterEventType.RUN_SUCCESS,
    }[status]
    return dg.DagsterEvent(event_type.value, job_name=run.job_name, message="ended")


def holders(instance: dg.DagsterInstance) -> set[str]:
    return {slot.run_id for slot in instance.event_log_storage.get_concurrency_info("llm").claimed_slots}


@pytest.mark.parametrize(
    "status", [dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.SUCCESS]
)
def test_an_ended_run_loses_its_slot_a_live_one_keeps_it(status: dg.DagsterRunStatus) -> None:
    with instance_for_tests(overrides=POOLS) as instance:
        instance.event_log_storage.set_concurrency_slots("llm", 2)
        ended = holding(instance, status)
        live = holding(instance, dg.DagsterRunStatus.STARTED)  # launched to the daemon: no process tag
        assert holders(instance) == {ended, live}

        lines = release_stale_slots(instance)

        assert holders(instance) == {live}
        assert instance.get_run_by_id(live).status == dg.DagsterRunStatus.STARTED  # type: ignore[union-attr]
        assert lines == [
            "freed the concurrency slots of 1 run(s) that ended without releasing them "
            f"(pool llm: run {ended[:8]} (evaluation_job a|p, {status.value.lower()}))"
        ]
        assert release_stale_slots(instance) == []  # nothing left to free, nothing said


def test_a_run_whose_process_is_gone_is_marked_failed_and_loses_its_slot() -> None:
    me = ProcessIdentity.current()
    dead = dataclasses.replace(me, start_ticks=str(int(me.start_ticks) - 1)).to_text()
    with instance_for_tests(overrides=POOLS) as instance:
        orphan = holding(instance, dg.DagsterRunStatus.STARTED, {PROCESS_TAG: dead})

        lines = release_stale_slots(instance)

        assert holders(instance) == set()
        assert instance.get_run_by_id(orphan).status == dg.DagsterRunStatus.FAILURE  # type: ignore[union-attr]
        assert len(lines) == 1 and lines[0].startswith(
            "marked 1 run(s) failed whose rag-eval process is gone"
        )


def test_rag_eval_run_frees_an_ended_runs_slot_before_executing(
    tiny_project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `rag-eval run` executes with (an empty plan here: only the check before the runs)."""
    with instance_for_tests(overrides=POOLS) as instance:
        canceled = holding(instance, dg.DagsterRunStatus.CANCELED)
        request = EvaluationRequest("20250101-000000-abcd", "full", (), ())
        execute_plan(instance, request, [], tiny_resources(tiny_project, tmp_path), show_progress=False)
        assert holders(instance) == set()
        assert (
            f"note: freed the concurrency slots of 1 run(s) that ended without releasing them (pool llm: run {canceled[:8]}"
            in (capsys.readouterr().err)
        )


@dg.op(pool="llm")
def calls_the_llm() -> None:
    pass


@dg.job
def llm_job() -> None:
    calls_the_llm()


def wait_for(lines: list[str], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not lines and time.monotonic() < deadline:
        time.sleep(0.1)


@dataclasses.dataclass
class WaitingRun:
    """llm_job started in a thread while another run holds the pool's one slot, with the notices the
    watcher printed meanwhile."""

    holder: str
    lines: list[str]
    results: list[dg.ExecuteInProcessResult]
    worker: threading.Thread


@contextmanager
def waiting_run(instance: dg.DagsterInstance) -> Iterator[WaitingRun]:
    """Yields once the watcher said the run waits; the run ends (or the test fails) inside the block."""
    holder = holding(instance, dg.DagsterRunStatus.STARTED)
    lines: list[str] = []
    run_id = str(uuid.uuid4())
    results: list[dg.ExecuteInProcessResult] = []
    with pool_wait_notices(instance, run_id, lines.append, interval_s=0.2):
        worker = threading.Thread(
            target=lambda: results.append(llm_job.execute_in_process(instance=instance, run_id=run_id))
        )
        worker.start()
        wait_for(lines)
        yield WaitingRun(holder, lines, results, worker)


def test_a_step_waiting_for_a_pool_says_who_holds_it_and_goes_on_once_freed() -> None:
    with instance_for_tests(overrides=POOLS) as instance, waiting_run(instance) as waiting:
        holder = waiting.holder
        assert not waiting.results  # still waiting for the slot
        assert waiting.lines == [
            f"step calls_the_llm waits for a slot of pool llm (limit 1), held by run {holder[:8]} "
            f"(evaluation_job a|p, started); it goes on when that run releases it (`rag-eval status "
            f"{holder}` shows it; terminate it in the UI to free the slot); "
            "`dagster instance concurrency set llm 2` allows more at once"
        ]
        instance.event_log_storage.free_concurrency_slots_for_run(holder)  # the holder ends its step
        waiting.worker.join(timeout=60)
    assert waiting.results and waiting.results[0].success
    assert len(waiting.lines) == 1  # said once


def test_a_slot_held_by_a_run_that_ended_meanwhile_is_freed_and_the_step_goes_on() -> None:
    with instance_for_tests(overrides=POOLS) as instance, waiting_run(instance) as waiting:
        held = instance.get_run_by_id(waiting.holder)
        assert held is not None
        # canceled mid-step: the run ends, its slot stays claimed
        instance.handle_run_event(waiting.holder, _status_event(held, dg.DagsterRunStatus.CANCELED))
        waiting.worker.join(timeout=60)
    assert waiting.results and waiting.results[0].success
    assert waiting.lines[1:] == [
        "freed the concurrency slots of 1 run(s) that ended without releasing them "
        f"(pool llm: run {waiting.holder[:8]} (evaluation_job a|p, canceled))"
    ]
