"""`rag-eval status` and `rag-eval list`: the runs of an evaluation, read from the Dagster instance, and
the metrics they wrote, read from the Parquet history."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import dagster as dg
import pandas as pd

from ..core.errors import InputError
from ..core.leaderboard.board import STATUS_METRICS
from ..core.leaderboard.render_text import mean_ci
from ..core.runs.processes import ProcessIdentity
from ..core.runs.run_tags import (
    CANCEL_TAG,
    EVALUATION_ID_TAG,
    MODE_TAG,
    PARTITION_TAG,
    PROCESS_TAG,
    SCHEDULE_TAG,
    SENSOR_TAG,
)
from ..core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from ..core.text_table import format_table
from ..lib.evaluation_runs import evaluation_id_of
from ..lib.io_managers import default_warehouse_dir
from ..lib.partitions import CHUNK_CONFIG, PROFILE
from ..lib.run_record import RunFacts
from .outcome import FAILED, SUCCEEDED
from .plan import STAGE_JOBS
from .run_failures import failure_of_run


class UnknownReference(InputError):
    """`status REF` found no run and no evaluation (or several runs) for REF."""


class AmbiguousReference(UnknownReference):
    """REF is the prefix of several runs or evaluations: bad input (HTTP 400), not a missing one (404)."""


_ACTIVE_LABEL = "in progress"


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    job_name: str
    partition: str
    status: dg.DagsterRunStatus
    created: float
    started: float | None
    ended: float | None
    evaluation_id: str
    mode: str
    tagged: bool
    origin: str = ""  # the sensor or schedule that requested it
    failure: str = ""  # filled in for failed runs by `with_failures`
    # trigger, who, profiles at start, questions (lib/run_record.py)
    facts: RunFacts = field(default_factory=lambda: RunFacts.of({}))
    cancel_requested: str = ""  # `rag-eval cancel` of its evaluation: "<time> by <who>"

    @staticmethod
    def of(record: dg.RunRecord) -> RunInfo:
        run = record.dagster_run
        return RunInfo(
            run_id=run.run_id,
            job_name=run.job_name,
            partition=run.tags.get(PARTITION_TAG, ""),
            status=run.status,
            created=record.create_timestamp.timestamp(),
            started=record.start_time,
            ended=record.end_time,
            evaluation_id=evaluation_id_of(run),
            mode=run.tags.get(MODE_TAG, ""),
            tagged=EVALUATION_ID_TAG in run.tags,
            origin=run.tags.get(SENSOR_TAG) or run.tags.get(SCHEDULE_TAG) or "",
            facts=RunFacts.of(run.tags),
            cancel_requested=run.tags.get(CANCEL_TAG, ""),
        )

    def describe(self) -> str:
        """The job (asset-selection runs of sensors show as "assets"), partition and who asked for it."""
        job = "assets" if self.job_name.startswith("__") else self.job_name
        return " ".join(
            part for part in (job, self.partition, f"(by {self.origin})" if self.origin else "") if part
        )

    @property
    def outcome(self) -> str:
        """succeeded, failed, cancelled; else in progress (cancelling ones too: they still run)."""
        if self.status in SUCCEEDED:
            return "succeeded"
        if self.status == dg.DagsterRunStatus.CANCELED:
            return "cancelled"
        return "failed" if self.status in FAILED else _ACTIVE_LABEL

    def record(self) -> dict[str, object]:
        """The run as one row of --format csv|json."""
        return {
            "evaluation_id": self.evaluation_id,
            "run_id": self.run_id,
            "job": self.job_name,
            "partition": self.partition,
            "status": self.status.value,
            "mode": self.mode,
            "started": _iso(self.started),
            "ended": _iso(self.ended),
            "trigger": self.facts.trigger,
            "triggered_by": self.facts.triggered_by,
            "profiles": dict(self.facts.profiles),
            "question_count": self.facts.question_count,
            "sample_size": self.facts.sample_size,
            "cancel_requested": self.cancel_requested,
            "failure": self.failure,
        }


def superseded_by(run: RunInfo, runs: Sequence[RunInfo]) -> RunInfo | None:
    """The later run of ``runs`` that did the same job on the same partition and succeeded (a resume's),
    if any: ``run``'s outcome is then history, no longer the evaluation's."""
    return next(
        (
            o
            for o in runs
            if o.created > run.created
            and (o.job_name, o.partition) == (run.job_name, run.partition)
            and o.status in SUCCEEDED
        ),
        None,
    )


def evaluation_state(runs: Sequence[RunInfo]) -> str:
    """What an evaluation (or a run) is now: in progress, cancelling (a cancel was asked and a run still
    ends), cancelled, failed or succeeded. A run that failed or was cancelled and then succeeded on
    resume (``superseded_by``) no longer counts: an evaluation whose resume succeeded has succeeded."""
    active = [r for r in runs if r.status not in SUCCEEDED | FAILED]
    requested = any(r.cancel_requested for r in runs)
    if any(r.status == dg.DagsterRunStatus.CANCELING for r in runs) or (requested and active):
        return "cancelling"
    if active:
        return _ACTIVE_LABEL
    standing = [r for r in runs if superseded_by(r, runs) is None]
    if all(r.status in SUCCEEDED for r in standing):
        return "succeeded"
    if requested or any(r.status == dg.DagsterRunStatus.CANCELED for r in standing):
        return "cancelled"
    return "failed"


def record_lines(runs: Sequence[RunInfo]) -> list[str]:
    """The run record's fields (lib/run_record.py) over an evaluation's runs: how it was triggered and by
    whom, the profiles at start, the questions each partition evaluated and the quick sample."""
    triggers = sorted({f"{r.facts.trigger} by {r.facts.triggered_by}".rstrip(" by") for r in runs})
    profiles: dict[str, str] = {}
    for run in runs:
        profiles.update(run.facts.profiles)
    counts = [r.facts.question_count for r in runs if r.facts.question_count is not None]
    samples = [r.facts.sample_size for r in runs if r.facts.sample_size is not None]
    lines = [f"trigger: {'; '.join(triggers)}"]
    lines.append(
        "profiles at start: "
        + (", ".join(f"{name} {snapshot}" for name, snapshot in sorted(profiles.items())) or "-")
    )
    lines.append(
        f"questions: {_span(counts)}"
        + (" per partition" if len(counts) > 1 else "")
        + f"; sample size: {_span(samples)}"
    )
    return lines


def _span(values: Sequence[int]) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _iso(timestamp: float | None) -> str:
    return "" if timestamp is None else datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Selection:
    """What a `status` reference names: one run, or every run of an evaluation (oldest first)."""

    kind: Literal["run", "evaluation"]
    ref: str
    runs: tuple[RunInfo, ...]


def _records(instance: dg.DagsterInstance, filters: dg.RunsFilter) -> list[RunInfo]:
    return sorted((RunInfo.of(r) for r in instance.get_run_records(filters=filters)), key=lambda r: r.created)


def find_runs(instance: dg.DagsterInstance, ref: str) -> Selection:
    """An evaluation id, a run id, or a unique prefix of either."""
    runs = _records(instance, dg.RunsFilter(tags={EVALUATION_ID_TAG: ref}))
    if runs:
        return Selection("evaluation", ref, tuple(runs))
    runs = _records(instance, dg.RunsFilter(run_ids=[ref]))
    if runs:
        return Selection("run", ref, tuple(runs))
    run_ids = [r for r in instance.get_run_ids() if r.startswith(ref)] if ref else []
    evaluation_ids = sorted(
        {v for _, values in instance.get_run_tags([EVALUATION_ID_TAG], value_prefix=ref) for v in values}
    )
    matches = [*run_ids, *evaluation_ids]
    if len(matches) == 1:
        return find_runs(instance, matches[0])
    if not matches:
        raise UnknownReference(
            f"no run and no evaluation matches {ref!r}: `rag-eval list` shows the recent evaluations"
        )
    shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
    raise AmbiguousReference(f"{ref!r} matches {len(matches)} runs or evaluations ({shown}): give more of it")


def metrics_of_runs(warehouse_dir: str | Path, runs: Sequence[RunInfo]) -> pd.DataFrame:
    """The retrieval_metrics_summary history rows the evaluation runs wrote (one per run and partition;
    evaluation_job's own run and the automation's asset runs have no ``chunk_config|profile``)."""
    return Warehouse(Path(warehouse_dir)).read_runs(
        RETRIEVAL_SUMMARY,
        [
            (r.run_id, dict(zip((CHUNK_CONFIG, PROFILE), r.partition.split("|", 1), strict=True)))
            for r in runs
            if "|" in r.partition
        ],
    )


def question_rows_of_runs(warehouse_dir: str | Path, runs: Sequence[RunInfo]) -> pd.DataFrame:
    """The per-question retrieval_metrics history rows the evaluation runs wrote (`rag-eval results`)."""
    return Warehouse(Path(warehouse_dir)).read_runs(
        "retrieval_metrics",
        [
            (r.run_id, dict(zip((CHUNK_CONFIG, PROFILE), r.partition.split("|", 1), strict=True)))
            for r in runs
            if "|" in r.partition
        ],
    )


def format_status(selection: Selection, metrics: pd.DataFrame) -> str:
    runs = selection.runs
    counts = Counter(r.outcome for r in runs)
    summary = ", ".join(
        f"{counts[k]} {k}" for k in ("succeeded", "failed", "cancelled", _ACTIVE_LABEL) if counts[k]
    )
    if selection.kind == "evaluation":
        modes = sorted({r.mode for r in runs if r.mode})
        lines = [
            f"evaluation {selection.ref} ({', '.join(modes) or 'mode not tagged'}): {len(runs)} runs, {summary}"
        ]
    else:
        run = runs[0]
        lines = [f"run {run.run_id}: {run.job_name} {run.partition or ''}".rstrip()]
        if run.tagged:
            lines.append(f"part of evaluation {run.evaluation_id} (rag-eval status {run.evaluation_id})")
    requested = sorted({r.cancel_requested for r in runs if r.cancel_requested})
    lines.append(
        f"status: {evaluation_state(runs)}" + (f" (cancel requested {requested[-1]})" if requested else "")
    )
    lines += record_lines(runs)
    header = ["run", "job", "partition", "status", "started", "ended", "duration", "questions", "sample"]
    rows = [
        [
            r.run_id[:8],
            r.job_name,
            r.partition or "-",
            r.status.value,
            _when(r.started),
            _when(r.ended),
            _duration(r.started, r.ended),
            _span([r.facts.question_count] if r.facts.question_count is not None else []),
            _span([r.facts.sample_size] if r.facts.sample_size is not None else []),
        ]
        for r in runs
    ]
    lines += ["", format_table(header, rows)]
    failed = [r for r in runs if r.status == dg.DagsterRunStatus.FAILURE]
    if failed:
        lines.append("")
    unresolved = 0
    for r in failed:
        where = " ".join(part for part in (r.run_id[:8], r.job_name, r.partition) if part)
        later = superseded_by(r, runs)
        unresolved += later is None
        resumed = f" (succeeded later: run {later.run_id[:8]})" if later else ""
        lines.append(f"FAILED {where}: {r.failure}{resumed}")
    if unresolved and selection.kind == "evaluation" and runs[0].tagged:
        lines.append(f"`rag-eval run --resume {selection.ref}` runs what did not succeed in this evaluation")
    if not metrics.empty:
        lines += ["", "retrieval metrics (mean [95% CI]):", format_metrics(metrics)]
    return "\n".join(lines)


def format_metrics(metrics: pd.DataFrame) -> str:
    present = [m for m in STATUS_METRICS if f"{m}_mean" in metrics.columns]
    header = ["chunk_config", "profile", "mode", "questions", *present]
    rows = [
        [
            str(row["chunk_config"]),
            str(row["profile"]),
            str(row["evaluation_mode"]),
            str(int(row["n_questions"])),
            *[mean_ci(row, m) for m in present],
        ]
        for _, row in metrics.sort_values(["chunk_config", "profile"], kind="stable").iterrows()
    ]
    return format_table(header, rows)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _duration(started: float | None, ended: float | None) -> str:
    if started is None:
        return "-"
    seconds = (ended if ended is not None else time.time()) - started
    text = f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    return text if ended is not None else f"{text} so far"


def with_failures(instance: dg.DagsterInstance, selection: Selection) -> Selection:
    runs = tuple(
        replace(r, failure=str(failure_of_run(instance, r.run_id)))
        if r.status == dg.DagsterRunStatus.FAILURE
        else r
        for r in selection.runs
    )
    return Selection(selection.kind, selection.ref, runs)


# A run in one of these states has a process that should still be executing it.
_RUNNING = (
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)


@dataclass(frozen=True)
class OrphanedRun:
    run_id: str
    job_name: str
    partition: str
    message: str


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[OrphanedRun]:
    """Runs still in progress on the instance whose `rag-eval` process is gone (SIGKILL, OOM, a crash
    never reports a run's end, so they would stay "in progress" forever): marked failed (cancelled, when
    a cancel was under way), with a message
    saying so and how to resume, and their concurrency slots freed. Runs without the process tag
    (launched to `dagster dev`, whose code server and run monitoring watch them) and runs of another
    host are left alone."""
    orphaned = []
    for record in instance.get_run_records(filters=dg.RunsFilter(statuses=list(_RUNNING))):
        run = record.dagster_run
        process = ProcessIdentity.parse(run.tags.get(PROCESS_TAG, ""))
        if process is None or not process.is_gone():
            continue
        current = instance.get_run_by_id(run.run_id)  # read after the process is known to be gone
        if current is None or current.status not in _RUNNING:
            continue
        evaluation_id = run.tags.get(EVALUATION_ID_TAG)
        remedy = (
            f"`rag-eval run --resume {evaluation_id}` runs what did not succeed in its evaluation"
            if evaluation_id
            else "run the command again"
        )
        if current.status == dg.DagsterRunStatus.CANCELING:  # it was being cancelled: it is, now
            message = (
                f"the process that executed this run ({process.describe()}) is gone before it could record "
                f"the cancellation, so `rag-eval` marked the run cancelled; {remedy}"
            )
            instance.report_run_canceled(current, message)
        else:
            message = (
                f"the process that executed this run ({process.describe()}) is gone: it was killed or "
                f"crashed before it could record the run's end, so `rag-eval` marked the run failed; {remedy}"
            )
            instance.report_run_failed(current, message)
        free_run_slots(instance, run.run_id)
        orphaned.append(OrphanedRun(run.run_id, run.job_name, run.tags.get(PARTITION_TAG, ""), message))
    return orphaned


def free_run_slots(instance: dg.DagsterInstance, run_id: str) -> None:
    """Frees every concurrency slot ``run_id`` holds: a run that ended mid-step (killed, cancelled) may
    keep its claim, and every later step of its pool would wait for it (runner/pools.py)."""
    if instance.event_log_storage.supports_global_concurrency_limits:
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)


def evaluation_status(instance: dg.DagsterInstance, ref: str, warehouse_dir: str | Path | None = None) -> str:
    """`rag-eval status REF`: every run with its status and times, failures with their message, and the
    headline retrieval metrics of the partitions evaluated."""
    selection = with_failures(instance, find_runs(instance, ref))
    metrics = metrics_of_runs(warehouse_dir or default_warehouse_dir(), selection.runs)
    return format_status(selection, metrics)


def status_records(instance: dg.DagsterInstance, ref: str) -> list[dict[str, object]]:
    """`rag-eval status REF --format csv|json`: one record per run."""
    return [r.record() for r in with_failures(instance, find_runs(instance, ref)).runs]


@dataclass(frozen=True)
class EvaluationSummary:
    evaluation_id: str
    started: float
    mode: str
    runs: tuple[RunInfo, ...]

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.outcome for r in self.runs)

    @property
    def state(self) -> str:
        return evaluation_state(self.runs)

    def record(self) -> dict[str, object]:
        """The evaluation as one row of `list --format csv|json`."""
        profiles: dict[str, str] = {}
        for run in self.runs:
            profiles.update(run.facts.profiles)
        first = self.runs[0].facts
        counts = [r.facts.question_count for r in self.runs if r.facts.question_count is not None]
        samples = [r.facts.sample_size for r in self.runs if r.facts.sample_size is not None]
        return {
            "evaluation_id": self.evaluation_id,
            "started": _iso(self.started),
            "mode": self.mode,
            "runs": len(self.runs),
            "succeeded": self.counts["succeeded"],
            "failed": self.counts["failed"],
            "cancelled": self.counts["cancelled"],
            "in_progress": self.counts[_ACTIVE_LABEL],
            "partitions": self.partitions,
            "status": self.state,
            "trigger": first.trigger,
            "triggered_by": first.triggered_by,
            "profiles": profiles,
            "questions": max(counts) if counts else None,
            "sample_size": max(samples) if samples else None,
        }

    @property
    def partitions(self) -> str:
        """How many chunk config x profile partitions it evaluated; a lone run shows its job."""
        evaluated = {r.partition for r in self.runs if r.job_name == STAGE_JOBS["evaluation"]}
        if len(self.runs) == 1 and not self.runs[0].tagged:
            return self.runs[0].describe()
        return str(len(evaluated))


def recent_evaluations(
    instance: dg.DagsterInstance, limit: int = 10, page: int = 200
) -> list[EvaluationSummary]:
    """The latest ``limit`` evaluations, newest first: runs grouped by their evaluation id tag; a run
    without one is an evaluation of its own."""
    groups: dict[str, list[RunInfo]] = {}
    cursor = None
    while len(groups) <= limit:
        records = instance.get_run_records(limit=page, cursor=cursor)
        if not records:
            break
        for record in records:
            info = RunInfo.of(record)
            groups.setdefault(info.evaluation_id, []).append(info)
        cursor = records[-1].dagster_run.run_id
    summaries = []
    for evaluation_id in list(groups)[:limit]:
        runs = groups[evaluation_id]
        if runs[0].tagged:  # its older runs may lie beyond the pages read
            runs = _records(instance, dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id}))
        runs = sorted(runs, key=lambda r: r.created)
        modes = sorted({r.mode for r in runs if r.mode})
        summaries.append(
            EvaluationSummary(evaluation_id, runs[0].created, "/".join(modes) or "-", tuple(runs))
        )
    return sorted(summaries, key=lambda s: s.started, reverse=True)


def evaluation_run_count(instance: dg.DagsterInstance, evaluation_id: str) -> int:
    return instance.get_runs_count(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id}))


def count_evaluations(instance: dg.DagsterInstance) -> int:
    """How many evaluations `recent_evaluations` can list: the evaluation ids, and each run without one."""
    ids = sorted({v for _, values in instance.get_run_tags([EVALUATION_ID_TAG]) for v in values})
    tagged = instance.get_runs_count(dg.RunsFilter(tags={EVALUATION_ID_TAG: ids})) if ids else 0
    return len(ids) + instance.get_runs_count() - tagged


def format_evaluations(summaries: Sequence[EvaluationSummary]) -> str:
    """The recent evaluations: counts of their runs by outcome, then what each is now, how and by whom it
    was triggered, and how many questions (and quick-mode sample) its partitions evaluated."""
    header = [
        "evaluation",
        "started",
        "mode",
        "runs",
        "succeeded",
        "failed",
        _ACTIVE_LABEL,
        "partitions",
        "cancelled",
        "status",
        "trigger",
        "by",
        "questions",
        "sample",
    ]
    rows = []
    for s in summaries:
        record = s.record()
        rows.append(
            [
                s.evaluation_id,
                _when(s.started),
                s.mode,
                str(len(s.runs)),
                str(s.counts["succeeded"]),
                str(s.counts["failed"]),
                str(s.counts[_ACTIVE_LABEL]),
                s.partitions,
                str(s.counts["cancelled"]),
                s.state,
                str(record["trigger"]),
                str(record["triggered_by"]) or "-",
                str(record["questions"] if record["questions"] is not None else "-"),
                str(record["sample_size"] if record["sample_size"] is not None else "-"),
            ]
        )
    return format_table(header, rows)
