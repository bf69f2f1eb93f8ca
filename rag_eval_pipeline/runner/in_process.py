"""An evaluation's plan executed in this process, one Dagster run per stage and partition, all tagged with
one evaluation id and with this process (so `rag-eval status` can tell a killed run from a running one)."""

from __future__ import annotations

import logging
import signal
import sys
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from ..core.runs.processes import ProcessIdentity
from ..core.runs.run_tags import PROCESS_TAG
from ..core.settings.configs import PipelineConfigs, RetrievalProfile
from ..lib.executor import DASK_SCHEDULER_ENV, dask_run_config, dask_scheduler
from ..lib.partition_sync import PartitionChanges, sync_partitions
from ..lib.partitions import keys_fixed_per_run
from ..lib.run_record import cli_trigger_tags, profile_snapshot
from ..lib.stages import JOB_ASSETS
from .outcome import CANCELLED_BEFORE_START, EvaluationOutcome, RunOutcome, blocked_reason
from .plan import EvaluationRequest, PlannedRun, run_config_for
from .run_failures import RunFailure, failure_of_result, failure_of_run
from .up_to_date import UpToDate

# In-process runs print nothing to the terminal themselves: Dagster's console would print a failed
# step's traceback (twice) and its own notes, drowning what `rag-eval` says in one line (the cause, the
# counts). The progress bar is the terminal's view; each run's warnings follow it (`run_warnings`); the
# UI has every log line.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# Dagster's note for each partition an input skips on purpose (`allow_missing_partitions`): expected
# whenever a subset is evaluated, so not repeated on the terminal.
_DAGSTER_NOTES = ("Couldn't load partition ",)


# A run found in one of these after this process executed it was cancelled (execute_plan).
_CANCEL_SEEN = (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.CANCELING)


@contextmanager
def signal_handlers_kept() -> Iterator[None]:
    """SIGINT's and SIGTERM's handlers as they were before, whatever Dagster left. Its in-process
    execution points SIGTERM at the SIGINT handler (for Kubernetes) and leaves it so after the run: where
    SIGINT is ignored (a background job, `nohup ... &`, `trap '' INT`) the process, and every child it
    starts later, would then ignore SIGTERM too; elsewhere SIGTERM would raise KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread sets handlers
        yield
        return
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            if handler is not None:  # None: set outside Python, cannot be put back
                signal.signal(signum, handler)


def execute_in_process(job: dg.JobDefinition, **kwargs: Any) -> dg.ExecuteInProcessResult:
    """``job.execute_in_process(**kwargs)`` with the signal handlers kept, the partition keys read once
    (lib/partitions.py) and the job's in-process form made once (``ephemeral_jobs_kept``): every run
    `rag-eval` executes in its own process goes through here."""
    with signal_handlers_kept(), keys_fixed_per_run():
        return ephemeral_jobs_kept(job).execute_in_process(**kwargs)


def ephemeral_jobs_kept(job: dg.JobDefinition) -> dg.JobDefinition:
    """``job`` (the same object), made to keep the in-process form of itself that Dagster builds at each
    ``execute_in_process`` (``as_ephemeral_job``, per op and asset selection, without resources or input
    values given with the run): Dagster takes the run's snapshot from that object, and a new one at every
    run rebuilt the snapshot each time (27 CPU ms a run, 22 runs in the demo). A job definition is
    immutable, as are those built from it; Dagster's other jobs run many times from one object too."""
    if "as_ephemeral_job" in vars(job):
        return job
    build = job.as_ephemeral_job
    kept: dict[tuple[tuple[str, ...] | None, frozenset[dg.AssetKey] | None], dg.JobDefinition] = {}
    lock = threading.Lock()

    def as_ephemeral_job(
        resource_defs: Any,
        input_values: Any,
        op_selection: Sequence[str] | None = None,
        asset_selection: Sequence[dg.AssetKey] | None = None,
    ) -> dg.JobDefinition:
        if resource_defs or input_values:  # given with this run: built for it alone
            return build(resource_defs, input_values, op_selection, asset_selection)
        key = (
            tuple(op_selection) if op_selection else None,
            frozenset(asset_selection) if asset_selection else None,
        )
        with lock:
            if key not in kept:
                kept[key] = build(resource_defs, input_values, op_selection, asset_selection)
            return kept[key]

    job.as_ephemeral_job = as_ephemeral_job  # type: ignore[method-assign]
    return job


def execute_on_workers(
    instance: dg.DagsterInstance,
    planned: PlannedRun,
    address: str,
    run_config: dict[str, Any],
    selection: Sequence[dg.AssetKey] | None,
    tags: dict[str, str],
) -> tuple[str, bool]:
    """The planned run with its steps on the Dask cluster at ``address`` (lib/executor.py): this process
    orchestrates, the workers load the job by name (``definitions.job_named``). Returns the run's id and
    whether it succeeded."""
    job = dg.build_reconstructable_job(
        "rag_eval_pipeline.definitions", "job_named", reconstructable_args=(planned.job_name,)
    )
    with (
        signal_handlers_kept(),
        keys_fixed_per_run(),
        dg.execute_job(
            job,
            instance,
            run_config={**run_config, **dask_run_config(address)},
            tags={**tags, **planned.partition_tags()},
            asset_selection=selection,
            raise_on_error=False,
        ) as result,
    ):
        return result.run_id, result.success


def process_tags() -> dict[str, str]:
    """Tags a run executed by this process carries: host, pid, boot id and process start time."""
    return {PROCESS_TAG: ProcessIdentity.current().to_text()}


def execute_plan(
    instance: dg.DagsterInstance,
    request: EvaluationRequest,
    plan: Sequence[PlannedRun],
    resources: dict[str, object] | None = None,
    show_progress: bool = True,
    evaluated_before: bool = False,
    force: bool = False,
    profiles: Sequence[RetrievalProfile] = (),
) -> EvaluationOutcome:
    """Each planned run in this process, in order, tagged with the request, this process and the run
    record (`rag-eval`, who, the ``profiles`` at start: lib/run_record.py); a failed partition is
    reported and the others still run, except those that need what failed. A run whose assets are all up
    to date (lib/freshness.py) is skipped, and one with some up to date runs only the others, unless
    ``force``. `rag-eval cancel` stops the run executing (runner/cancel.py) and the evaluation: the runs
    not started yet are recorded CANCELED."""
    from tqdm import tqdm

    from ..definitions import build_definitions
    from .cancel import CancelWatch, evaluation_cancelled_since, mark_cancelled, record_not_started
    from .pools import pool_wait_notices, release_stale_slots

    address = dask_scheduler()
    if address is not None and resources is not None:
        raise ValueError(
            f"{DASK_SCHEDULER_ENV} is set: Dask workers load the default resources (from the environment), "
            "so an evaluation with other resources cannot be handed to them"
        )
    started_at = datetime.now(UTC)
    tags = {**request.tags(), **process_tags(), **cli_trigger_tags(), **profile_snapshot(profiles)}
    defs = build_definitions(resources)
    for line in release_stale_slots(instance):  # a slot an ended run kept would block a step for good
        print(f"note: {line}", file=sys.stderr)
    up_to_date = None if force else UpToDate(instance, defs, (resources or {}).get("project"))
    outcomes: list[RunOutcome] = []
    cancelled = ""  # the request that stopped the evaluation ("<time> by <who>")
    steps = tqdm(plan, desc="main job", unit="run", disable=not show_progress)
    for planned in steps:
        cancelled = cancelled or evaluation_cancelled_since(instance, request.evaluation_id, started_at)
        run_config = {**QUIET_LOGS, **run_config_for(planned, request.mode, request.sample_size)}
        if cancelled:
            run_id = record_not_started(
                instance,
                defs.resolve_job_def(planned.job_name),
                run_config,
                {**tags, **planned.partition_tags()},
                f"not started: its evaluation was cancelled ({cancelled})",
            )
            outcomes.append(RunOutcome(planned, "cancelled", run_id, blocked_by=CANCELLED_BEFORE_START))
            continue
        blocked = blocked_reason(planned, outcomes, evaluated_before)
        if blocked:
            outcomes.append(RunOutcome(planned, "not run", blocked_by=blocked))
            continue
        steps.set_postfix_str(planned.label)
        selection = None
        if up_to_date is not None:
            stale = up_to_date.stale(planned, request)
            if not stale:
                outcomes.append(RunOutcome(planned, "up to date"))
                continue
            selection = run_selection(planned, stale)
        run_id = str(uuid.uuid4())  # known before the run starts, so its waits can be watched

        def say(line: str, label: str = planned.label) -> None:
            tqdm.write(f"{label}: {line}", file=sys.stderr)

        if address is not None:  # each step on a Dask worker; this process orchestrates
            run_id, succeeded = execute_on_workers(instance, planned, address, run_config, selection, tags)
            if up_to_date is not None:
                up_to_date.ran()
            for line in run_warnings(instance, run_id):
                tqdm.write(f"warning: {planned.label}: {line}", file=sys.stderr)
            failure = None if succeeded else failure_of_run(instance, run_id)
            outcomes.append(RunOutcome(planned, "succeeded" if succeeded else "failed", run_id, failure))
            continue
        watch = CancelWatch(instance, run_id)
        result: dg.ExecuteInProcessResult | None = None
        try:
            with pool_wait_notices(instance, run_id, say), watch.watching():
                result = execute_in_process(
                    defs.resolve_job_def(planned.job_name),
                    instance=instance,
                    partition_key=planned.partition_key,
                    run_config=run_config,
                    asset_selection=selection,
                    tags=tags,
                    raise_on_error=False,
                    run_id=run_id,
                )
            watch.settle()
        except KeyboardInterrupt:
            if not watch.fired:
                raise  # Ctrl-C in this terminal: `rag-eval run` says how to resume
        if up_to_date is not None:
            up_to_date.ran()
        for line in run_warnings(instance, run_id):
            tqdm.write(f"warning: {planned.label}: {line}", file=sys.stderr)
        ended = instance.get_run_by_id(run_id)
        finished = ended is not None and ended.status == dg.DagsterRunStatus.SUCCESS
        if finished and result is not None and result.success:  # it ended before the request reached it
            outcomes.append(RunOutcome(planned, "succeeded", run_id))
        elif watch.fired or (ended is not None and ended.status in _CANCEL_SEEN):
            # interrupted before Dagster could record the end, or the request marked it CANCELING just
            # after it ended (nothing else would end it then: this process executed it): it ends here,
            # CANCELED, its slots freed; what it wrote stays, so a resume finds it up to date
            mark_cancelled(instance, run_id, "cancelled by `rag-eval cancel`")
            outcomes.append(
                RunOutcome(planned, "cancelled", run_id, RunFailure("cancelled (rag-eval cancel)"))
            )
            cancelled = cancelled or evaluation_cancelled_since(instance, request.evaluation_id, started_at)
        else:
            failure = failure_of_result(result) if result is not None else failure_of_run(instance, run_id)
            outcomes.append(RunOutcome(planned, "failed", run_id, failure))
    return EvaluationOutcome(request, tuple(outcomes))


def run_selection(planned: PlannedRun, stale: Iterable[str]) -> list[dg.AssetKey] | None:
    """The assets a run must materialize as Dagster's asset selection: None (the job as it is) when
    that is every asset of its job, so the run is of the job Dagster already built rather than of a
    subset made again for it (twice: the in-process form, then the run's record)."""
    names = set(stale)
    if names == set(JOB_ASSETS[planned.job_name]):
        return None
    return [dg.AssetKey(name) for name in sorted(names)]


def run_warnings(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The warnings a run's steps logged ("<step>: <message>", each once), without Dagster's notes on
    partitions skipped on purpose: what the terminal shows of a run besides its outcome."""
    lines = []
    for entry in instance.all_logs(run_id):
        message = entry.user_message
        if (
            entry.level != logging.WARNING
            or entry.dagster_event is not None
            or message.startswith(_DAGSTER_NOTES)
        ):
            continue
        step = entry.step_key or ""
        lines.append(message if not step or message.startswith(f"{step}: ") else f"{step}: {message}")
    return list(dict.fromkeys(lines))


def sync_configs(instance: dg.DagsterInstance, configs: PipelineConfigs) -> PartitionChanges:
    """A partition for every entry of the config files; an entry no longer configured keeps its
    partitions, and is noted on stderr. Returns what was added and what is no longer configured."""
    changes = sync_partitions(instance, configs)
    for name in changes.removed_chunk_configs + changes.removed_profiles:
        print(f"note: {name} is no longer configured; its partitions and history are kept", file=sys.stderr)
    return changes
