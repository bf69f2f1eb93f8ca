"""Cancelling an evaluation or a run (`rag-eval cancel REF`, the tech spec's ``DELETE /eval/runs/{id}``):
its status goes ``cancelling``, then ``cancelled``, and Dagster holds every bit of that state.

Who stops a run depends on who executes it:
- a queued run (launched to `dagster dev`, not dequeued yet) is cancelled at once by the instance's run
  coordinator;
- a run a `dagster dev` run worker executes is terminated through the instance's run coordinator and
  launcher (the code server's gRPC API interrupts the worker: Dagster's own termination);
- a run `rag-eval run` executes in its own process (in another terminal) is marked CANCELING; that
  process watches it (``CancelWatch``), interrupts it, Dagster marks it CANCELED, and the process then
  starts none of the evaluation's remaining runs: each is recorded as a CANCELED run, so the history
  holds the whole plan; a run whose process is gone is marked CANCELED at once.
The evaluation carries the request as a tag on its runs (``CANCEL_TAG``, with when and by whom), so a
process between two runs sees it too. Interrupted writes leave no half file (the warehouse writes to a
temporary name and renames), and a cancelled run's concurrency slots are freed (runner/pools.py).
`rag-eval run --resume ID` later runs what did not succeed, the cancelled runs included.
"""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import dagster as dg

from ..core.runs.processes import ProcessIdentity
from ..core.runs.run_tags import CANCEL_TAG, EVALUATION_ID_TAG, PARTITION_TAG, PROCESS_TAG, TRIGGERED_BY_TAG
from ..lib.run_record import cli_trigger_tags
from .outcome import ENDED_STATUSES
from .run_status import find_runs, free_run_slots

# How often an executing process looks whether its run was asked to stop: one run-storage read each
# time (every second took 4 % of a cold run's samples, issue 34); a request reaches the run within this,
# well inside the wait of `rag-eval cancel`.
WATCH_INTERVAL_S = 3.0

CancelAction = Literal["cancelled", "cancelling", "ended before"]


@dataclass(frozen=True)
class CancelledRun:
    run_id: str
    job_name: str
    partition: str
    before: str  # its status when the request came
    action: CancelAction
    status: str = ""  # its status when the command ended (filled in by ``wait_until_ended``)


@dataclass(frozen=True)
class CancelRequest:
    """What `rag-eval cancel REF` asked for: an evaluation (every run) or one run."""

    kind: Literal["run", "evaluation"]
    ref: str
    runs: tuple[CancelledRun, ...]
    requested: str  # "<UTC time> by <user@host>"

    @property
    def status(self) -> Literal["cancelling", "cancelled", "ended before"]:
        if all(r.action == "ended before" for r in self.runs):
            return "ended before"
        statuses = {r.status or r.action for r in self.runs if r.action != "ended before"}
        ended = {s.value for s in ENDED_STATUSES}
        return "cancelled" if statuses <= ended | {"cancelled"} else "cancelling"


def request_cancel(instance: dg.DagsterInstance, ref: str) -> CancelRequest:
    """Asks every unfinished run of the evaluation (or the run) ``ref`` names to stop, as its executor
    needs (module docstring), and tags the evaluation's runs with the request."""
    selection = find_runs(instance, ref)
    requested = (
        f"{datetime.now(UTC).isoformat(timespec='microseconds')} by {cli_trigger_tags()[TRIGGERED_BY_TAG]}"
    )
    runs = tuple(_cancel_one(instance, r.run_id, requested) for r in selection.runs)
    if selection.kind == "evaluation":
        for run in selection.runs:  # the process between two runs sees it on any of them
            instance.add_run_tags(run.run_id, {CANCEL_TAG: requested})
    return CancelRequest(selection.kind, selection.ref, runs, requested)


def _cancel_one(instance: dg.DagsterInstance, run_id: str, requested: str) -> CancelledRun:
    run = instance.get_run_by_id(run_id)
    assert run is not None  # find_runs just read it
    before = run.status.value
    done = CancelledRun(run_id, run.job_name, run.tags.get(PARTITION_TAG, ""), before, "ended before")
    if run.status in ENDED_STATUSES:
        return done
    message = f"cancelled by `rag-eval cancel` ({requested})"
    process = ProcessIdentity.parse(run.tags.get(PROCESS_TAG, ""))
    if process is not None:  # executed by a `rag-eval` process: it watches for CANCELING
        if run.status == dg.DagsterRunStatus.CANCELING and not process.is_gone():
            return _as(done, "cancelling")
        if process.is_gone():  # nobody left to stop it: it ends here
            mark_cancelled(instance, run_id, f"{message}; the process that executed it is gone")
            return _as(done, "cancelled")
        instance.report_run_canceling(run, message=message)
        current = instance.get_run_by_id(run_id)
        if current is not None and current.status in ENDED_STATUSES:
            return done  # Dagster recorded its end after this request's mark
        if _ended_meanwhile(instance, run_id):
            # it ended between this request's read and its mark: the process that executed it has moved
            # on and will never end it, so it ends here (the process ends it too if it looks after this)
            mark_cancelled(instance, run_id, f"{message}; it had ended as the request reached it")
            return _as(done, "cancelled")
        return _as(done, "cancelling")
    if run.status == dg.DagsterRunStatus.QUEUED:
        instance.run_coordinator.cancel_run(run_id)  # the queue's own cancellation: CANCELED at once
        free_run_slots(instance, run_id)
        return _as(done, "cancelled")
    # executed by a run worker of `dagster dev`: terminated through the instance's launcher
    if not instance.run_coordinator.cancel_run(run_id):
        current = instance.get_run_by_id(run_id)
        if current is not None and current.status not in ENDED_STATUSES:
            # no worker to reach (it never started, or its code server is gone): nothing runs it any more
            mark_cancelled(instance, run_id, f"{message}; no run worker answered the termination request")
            return _as(done, "cancelled")
    return _as(done, "cancelling")


def _ended_meanwhile(instance: dg.DagsterInstance, run_id: str) -> bool:
    """Whether the run's event log holds its end (success or failure), whatever its status says."""
    ends = {dg.DagsterEventType.RUN_SUCCESS, dg.DagsterEventType.RUN_FAILURE}
    return bool(instance.get_records_for_run(run_id, of_type=ends, limit=1).records)


def _as(run: CancelledRun, action: CancelAction) -> CancelledRun:
    return CancelledRun(run.run_id, run.job_name, run.partition, run.before, action)


def mark_cancelled(instance: dg.DagsterInstance, run_id: str, message: str) -> None:
    """The run ends CANCELED (CANCELING first, as Dagster reports it) and its slots are freed."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.status in ENDED_STATUSES:
        return
    if run.status != dg.DagsterRunStatus.CANCELING:
        instance.report_run_canceling(run, message=message)
    instance.report_run_canceled(run, message=message)
    free_run_slots(instance, run_id)


def wait_until_ended(
    instance: dg.DagsterInstance, request: CancelRequest, timeout_s: float, poll_s: float = 0.5
) -> CancelRequest:
    """The request once every run it asked to stop has ended (or ``timeout_s`` passed), each with its
    status then; the slots of every run that ended cancelled are freed."""
    deadline = time.monotonic() + timeout_s
    while True:
        runs = {r.run_id: instance.get_run_by_id(r.run_id) for r in request.runs}
        pending = [i for i, run in runs.items() if run is not None and run.status not in ENDED_STATUSES]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(poll_s)
    updated = []
    for cancelled in request.runs:
        run = runs[cancelled.run_id]
        status = run.status.value if run is not None else "DELETED"
        if run is not None and run.status == dg.DagsterRunStatus.CANCELED:
            free_run_slots(instance, run.run_id)
        updated.append(
            CancelledRun(
                cancelled.run_id,
                cancelled.job_name,
                cancelled.partition,
                cancelled.before,
                cancelled.action,
                status,
            )
        )
    return CancelRequest(request.kind, request.ref, tuple(updated), request.requested)


def evaluation_cancelled_since(instance: dg.DagsterInstance, evaluation_id: str, since: datetime) -> str:
    """The cancel request ("<time> by <who>") made for the evaluation at or after ``since`` ("" when
    none): what a process executing it looks at between two runs. An older request (before a resume)
    does not count."""
    for run in instance.get_runs(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id})):
        stamp = run.tags.get(CANCEL_TAG, "")
        when = _time_of(stamp)
        if when is not None and when >= since:
            return stamp
    return ""


def _time_of(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.split(" by ", 1)[0])
    except ValueError:
        return None


@dataclass
class CancelWatch:
    """While this process executes run ``run_id`` (in the main thread): when `rag-eval cancel` marks it
    CANCELING, the main thread is interrupted, which Dagster turns into a cancelled run (a step stops
    where it is; the run ends CANCELED because it was CANCELING). ``fired`` says whether it happened."""

    instance: dg.DagsterInstance
    run_id: str
    interval_s: float = WATCH_INTERVAL_S
    fired: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)

    @contextmanager
    def watching(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # only the main thread can be interrupted: the run ends, then the evaluation stops
            return
        thread = threading.Thread(target=self._watch, name=f"cancel-watch-{self.run_id[:8]}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()
            self.settle()

    def settle(self) -> None:
        """A call (so CPython runs a pending signal handler here, inside the caller's try): an interrupt
        sent just before the watcher stopped is raised now, not after the caller's handler is gone."""

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                run = self.instance.get_run_by_id(self.run_id)
            except Exception:  # a busy storage: look again at the next tick
                continue
            if run is not None and run.status == dg.DagsterRunStatus.CANCELING:
                self.fired = True
                _thread.interrupt_main()
                return


def record_not_started(
    instance: dg.DagsterInstance,
    job: dg.JobDefinition,
    run_config: dict[str, object],
    tags: dict[str, str],
    reason: str,
) -> str:
    """A planned run the cancelled evaluation will not start, recorded as a CANCELED run of its job and
    partition (so the UI, `status` and `--resume` see the whole plan); returns its id."""
    run = instance.create_run_for_job(job, run_config=run_config, tags=tags)
    instance.report_run_canceled(run, message=reason)
    return run.run_id
