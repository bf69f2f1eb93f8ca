"""An evaluation started over HTTP (``POST /api/v1/eval/runs``) and what ``GET /runs/{id}`` says of any
evaluation: its status and progress.

The request answers at once: the evaluation runs in a worker process of its own (worker.py), which calls
the runner as `rag-eval run` does (runner/evaluate.py), in its main thread, so `cancel` interrupts its
run as it interrupts a terminal's (runner/cancel.py); its runs are the workspace instance's Dagster runs,
tagged ``api`` by the token's name. Until its first run exists the instance knows nothing of it, so the
request is kept as .rag-eval/evaluations/<id>.json (the order, who asked, the worker, then the plan and
the end), which the progress reads too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import InputError
from ..core.project.project_files import ProjectFiles
from ..core.project.workspace import PROJECT_DIR_ENV
from ..core.runs.processes import ProcessIdentity
from ..core.settings.monitoring_settings import EvaluationMode
from ..core.store.files import locked, make_folder, write_text_atomically

if TYPE_CHECKING:
    import dagster as dg

    from ..runner.run_status import RunInfo

RECORDS = Path(".rag-eval") / "evaluations"
# an evaluation id (eval-20261122T020000-1a2b3c, nightly-...), a run id (a UUID) or a prefix of either:
# checked before it names a file or reaches a query
REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")

# What `GET /runs` and `GET /runs/{id}` say an evaluation is (the CLI's words, runner/run_status.py,
# in the spec's): pending (asked for, no run yet), running, cancelling, cancelled, failed, completed.
ApiStatus = Literal["pending", "running", "cancelling", "cancelled", "failed", "completed"]
_STATUS_OF_STATE: dict[str, ApiStatus] = {
    "in progress": "running",
    "cancelling": "cancelling",
    "cancelled": "cancelled",
    "failed": "failed",
    "succeeded": "completed",
}
ENDED: frozenset[ApiStatus] = frozenset({"cancelled", "failed", "completed"})
Phase = Literal["planning", "ingestion", "chunking", "evaluation", "leaderboard", "done"]


def check_ref(ref: str) -> str:
    if not REF.match(ref):
        raise InputError(
            f"{ref[:80]!r} is not an evaluation or run id: ids are letters, digits, '-', '_', '.', ':' "
            "(`GET /api/v1/eval/runs` lists them)"
        )
    return ref


@dataclass(frozen=True)
class EvaluationRecord:
    """What the API keeps of an evaluation it started (the instance holds the rest)."""

    evaluation_id: str
    triggered_by: str  # the token's name
    requested: str  # UTC ISO time
    kind: Literal["evaluation", "regeneration"] = "evaluation"
    chunk_configs: list[str] | None = None
    profiles: list[str] | None = None
    mode: EvaluationMode = "full"
    sample_size: int | None = None
    force: bool = False
    worker: str = ""  # the worker's ProcessIdentity
    plan: list[list[str]] | None = None  # [stage, job, partition] per planned run, once planned
    ended: bool = False
    outcome: str = ""  # the worker's last word: completed, failed, cancelled
    error: str = ""  # bad input found before any run, or why the worker stopped
    documents: list[str] | None = None  # a regeneration's documents (None: all)
    generator: str | None = None  # a regeneration's generator override
    result: dict[str, Any] | None = None  # a regeneration's counts (`regenerate-questions --format json`)

    def worker_gone(self) -> bool:
        process = ProcessIdentity.parse(self.worker)
        return process is not None and process.is_gone() is True


@dataclass(frozen=True)
class EvaluationRecords:
    root: Path  # the workspace

    def path(self, evaluation_id: str) -> Path:
        return self.root / RECORDS / f"{check_ref(evaluation_id)}.json"

    def read(self, evaluation_id: str) -> EvaluationRecord | None:
        """The record of an evaluation the API started; None for any other id (a nightly's, a CLI's)."""
        if not REF.match(evaluation_id):
            return None
        path = self.path(evaluation_id)
        if not path.is_file():
            return None
        return EvaluationRecord(**json.loads(path.read_text(encoding="utf-8")))

    def write(self, record: EvaluationRecord) -> None:
        path = self.path(record.evaluation_id)
        make_folder(path.parent)
        write_text_atomically(path, json.dumps(asdict(record), indent=2) + "\n")

    def update(self, evaluation_id: str, **changes: Any) -> EvaluationRecord:
        """The record with ``changes``, read and written under its lock (server and worker both write)."""
        with locked(self.path(evaluation_id)):
            current = self.read(evaluation_id)
            assert current is not None, evaluation_id
            updated = replace(current, **changes)
            self.write(updated)
        return updated

    def all(self) -> list[EvaluationRecord]:
        folder = self.root / RECORDS
        if not folder.is_dir():
            return []
        return [r for p in sorted(folder.glob("*.json")) if (r := self.read(p.stem)) is not None]


@dataclass(frozen=True)
class EvaluationOrderBody:
    """The body of ``POST /runs``: the selection and mode, as `rag-eval run` takes them."""

    chunk_configs: list[str] | None = None
    profiles: list[str] | None = None
    mode: EvaluationMode = "full"
    sample_size: int | None = None
    force: bool = False


def start_evaluation(files: ProjectFiles, body: EvaluationOrderBody, triggered_by: str) -> EvaluationRecord:
    """Checks the selection as `rag-eval run` does (bad input: InputError, nothing started), records the
    request and starts its worker; returns at once."""
    from ..core.runs.evaluation_ids import new_evaluation_id
    from ..runner.plan import plan_main_job

    if body.sample_size is not None and (body.mode != "quick" or body.sample_size < 1):
        raise InputError("--sample-size takes a number >= 1 and applies to --mode quick only")
    plan_main_job(files.load_configs(), body.chunk_configs, body.profiles)  # unknown names: 400 now
    return _start_worker(
        files,
        EvaluationRecord(
            evaluation_id=new_evaluation_id(),
            triggered_by=triggered_by,
            requested=datetime.now(UTC).isoformat(timespec="seconds"),
            **asdict(body),
        ),
    )


def start_regeneration(
    files: ProjectFiles, documents: Sequence[str] | None, generator: str | None, triggered_by: str
) -> EvaluationRecord:
    """`rag-eval regenerate-questions [--document DOC...] [--generator G]` in a worker: ``documents``
    (ids or globs, checked against the corpus now: bad input is InputError, nothing started)."""
    from ..core.evaluation.document_scope import resolve_documents
    from ..core.runs.evaluation_ids import new_evaluation_id

    resolved = None
    if documents is not None:
        resolved = resolve_documents(documents, [d.doc_id for d in files.load_corpus()], "document_ids")
    return _start_worker(
        files,
        EvaluationRecord(
            evaluation_id="regen-" + new_evaluation_id().removeprefix("eval-"),
            triggered_by=triggered_by,
            requested=datetime.now(UTC).isoformat(timespec="seconds"),
            kind="regeneration",
            documents=resolved,
            generator=generator,
            plan=[["ingestion", "ingestion_job", ""]],
        ),
    )


def _start_worker(files: ProjectFiles, record: EvaluationRecord) -> EvaluationRecord:
    """Records the request and starts its worker (worker.py) with the workspace as its project."""
    records = EvaluationRecords(files.root)
    records.write(record)
    log = records.path(record.evaluation_id).with_suffix(".log")
    with open(log, "ab") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "rag_eval_pipeline.api.worker", str(files.root), record.evaluation_id],
            cwd=files.root,
            env={**os.environ, PROJECT_DIR_ENV: str(files.root)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C of the server does not stop the evaluations it started
        )
    _reap_later(worker)
    return records.update(record.evaluation_id, worker=ProcessIdentity.of_pid(worker.pid).to_text())


_WORKERS: list[subprocess.Popen[bytes]] = []


def _reap_later(worker: subprocess.Popen[bytes]) -> None:
    """Keeps the worker's handle and waits for the workers that ended, so none stays a zombie (a
    zombie's pid still answers, and the worker would look alive)."""
    _WORKERS.append(worker)
    for ended in [w for w in _WORKERS if w.poll() is not None]:
        _WORKERS.remove(ended)


def reap_workers() -> None:
    for ended in [w for w in _WORKERS if w.poll() is not None]:
        _WORKERS.remove(ended)


@dataclass(frozen=True)
class Progress:
    total_questions: int | None
    completed: int | None
    current_phase: Phase
    total_runs: int
    completed_runs: int

    def record(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class EvaluationView:
    """One evaluation (or one run) as the API shows it."""

    id: str
    kind: Literal["evaluation", "run", "regeneration"]
    status: ApiStatus
    mode: str
    trigger: str
    triggered_by: str
    created: str
    progress: Progress
    runs: list[dict[str, object]] = field(default_factory=list)
    error: str = ""
    cancel_requested: str = ""
    result: dict[str, Any] | None = None  # a regeneration's counts

    def record(self, with_runs: bool = True) -> dict[str, object]:
        out = asdict(self)
        out["progress"] = self.progress.record()
        if not with_runs:
            del out["runs"]
        return out


def view_evaluation(
    instance: dg.DagsterInstance, files: ProjectFiles, ref: str, runs_of: Sequence[RunInfo] | None = None
) -> EvaluationView:
    """``GET /runs/{ref}``: an evaluation id or run id (or a unique prefix), as `rag-eval status` takes it.
    UnknownReference when neither the instance nor the API's records know it."""
    from ..runner.run_status import UnknownReference, find_runs, with_failures

    check_ref(ref)
    records = EvaluationRecords(files.root)
    record = records.read(ref)
    kind: Literal["evaluation", "run"] = "evaluation"
    if runs_of is not None:
        runs = list(runs_of)
    else:
        try:
            selection = with_failures(instance, find_runs(instance, ref))
        except UnknownReference:
            if record is None:
                raise
            runs = []
        else:
            kind, ref, runs = selection.kind, selection.ref, list(selection.runs)
            record = record or (records.read(ref) if kind == "evaluation" else None)
    return _view(files, ref, kind, record, runs)


def list_evaluations(
    instance: dg.DagsterInstance, files: ProjectFiles, limit: int, offset: int
) -> tuple[list[EvaluationView], int]:
    """``GET /runs``: a page of the evaluations `rag-eval list` shows, newest first, after those asked
    for over HTTP that have no run yet (still planning, or refused before any run); and how many there
    are in all."""
    from ..runner.run_status import count_evaluations, evaluation_run_count, recent_evaluations

    reap_workers()
    summaries = recent_evaluations(instance, offset + limit)
    total = count_evaluations(instance)
    records = EvaluationRecords(files.root)
    with_runs = {s.evaluation_id for s in summaries}
    without_runs = [
        r
        for r in sorted(records.all(), key=lambda r: r.requested, reverse=True)
        if r.evaluation_id not in with_runs
        and (not r.ended or r.error)
        and not evaluation_run_count(instance, r.evaluation_id)
    ]
    views = [_view(files, r.evaluation_id, "evaluation", r, ()) for r in without_runs]
    views += [
        _view(files, s.evaluation_id, "evaluation", records.read(s.evaluation_id), s.runs) for s in summaries
    ]
    return views[offset : offset + limit], total + len(without_runs)


def _view(
    files: ProjectFiles,
    ref: str,
    kind: Literal["evaluation", "run"],
    record: EvaluationRecord | None,
    runs: Sequence[RunInfo],
) -> EvaluationView:
    from ..runner.run_status import evaluation_state

    worker_done = record is None or record.ended or record.worker_gone()
    error = record.error if record is not None else ""
    if record is not None and not record.ended and record.worker_gone():
        error = error or "the worker process that ran this evaluation is gone (killed or crashed)"
    status: ApiStatus
    if runs:
        status = _STATUS_OF_STATE[evaluation_state(runs)]
        if not worker_done and status in ENDED:  # between two runs, or recording the cancelled ones
            cancelled = status == "cancelled" or any(r.cancel_requested for r in runs)
            status = "cancelling" if cancelled else "running"
        if (
            worker_done
            and record is not None
            and record.outcome == "cancelled"
            and status in ("running", "failed")
        ):
            status = "cancelled"  # interrupted while it planned: its runs may not say so
    elif not worker_done:
        status = "cancelling" if record is not None and record.outcome == "cancelled" else "pending"
    else:
        status = "cancelled" if record is not None and record.outcome == "cancelled" else "failed"
    failures = [str(r.failure) for r in runs if r.failure]
    first = runs[0] if runs else None
    return EvaluationView(
        id=ref,
        kind="regeneration" if record is not None and record.kind == "regeneration" else kind,
        status=status,
        mode=(first.mode if first is not None else "") or (record.mode if record is not None else ""),
        trigger=first.facts.trigger if first is not None else "api",
        triggered_by=first.facts.triggered_by
        if first is not None
        else (record.triggered_by if record else ""),
        created=record.requested if record is not None else _iso(first.created if first else None),
        progress=_progress(files, record, runs, status in ENDED),
        runs=[r.record() for r in runs],
        error=error or "; ".join(dict.fromkeys(failures)),
        cancel_requested=next((r.cancel_requested for r in runs if r.cancel_requested), ""),
        result=record.result if record is not None else None,
    )


def _iso(timestamp: float | None) -> str:
    return "" if timestamp is None else datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _progress(
    files: ProjectFiles, record: EvaluationRecord | None, runs: Sequence[RunInfo], ended: bool
) -> Progress:
    """How far the evaluation is: the planned runs ended (a run skipped as up to date creates no Dagster
    run: a later planned run having started means it is behind us), the phase of the first planned run
    not ended, and the questions of the evaluation partitions done, out of all of them (each partition
    evaluates the same questions: the count a run of it recorded, else what the warehouse holds)."""
    from ..runner.outcome import ENDED_STATUSES
    from ..runner.plan import STAGE_JOBS

    latest: dict[tuple[str, str], RunInfo] = {}
    for run in runs:  # oldest first: a resume's run replaces the one it re-ran
        latest[(run.job_name, run.partition)] = run
    if record is not None and record.plan is not None:
        plan = [(stage, job, partition) for stage, job, partition in record.plan]
    else:
        stages = {job: stage for stage, job in STAGE_JOBS.items()}
        plan = [(stages.get(job, job), job, partition) for job, partition in latest]
    started = [i for i, (_, job, partition) in enumerate(plan) if (job, partition) in latest]
    last = max(started, default=-1)
    done = [
        ended
        or i < last
        or ((job, partition) in latest and latest[(job, partition)].status in ENDED_STATUSES)
        for i, (_, job, partition) in enumerate(plan)
    ]
    if record is not None and record.plan is None and not ended:
        phase: Phase = "planning"
    elif all(done):
        phase = "done"
    else:
        phase = plan[done.index(False)][0]  # type: ignore[assignment]
    evaluation = [d for (stage, _, _), d in zip(plan, done, strict=True) if stage == "evaluation"]
    per_partition = _questions_per_partition(files, record, runs)
    return Progress(
        total_questions=None if per_partition is None else per_partition * len(evaluation),
        completed=None if per_partition is None else per_partition * sum(evaluation),
        current_phase=phase,
        total_runs=len(plan),
        completed_runs=sum(done),
    )


def _questions_per_partition(
    files: ProjectFiles, record: EvaluationRecord | None, runs: Sequence[RunInfo]
) -> int | None:
    for run in runs:
        count = run.facts.sample_size if run.facts.sample_size is not None else run.facts.question_count
        if count is not None:
            return count
    from ..core.questions.question_catalog import catalog, question_stats
    from ..core.store.warehouse import Warehouse

    table = Warehouse.in_project(files.root).read_current("eval_questions")
    if table is None:
        return None
    total = question_stats(catalog(table)).total
    if record is not None and record.mode == "quick" and record.sample_size is not None:
        return min(total, record.sample_size)
    return total


def cancel_pending(files: ProjectFiles, record: EvaluationRecord) -> bool:
    """Stops an API evaluation whose worker has made no run yet (still planning): the worker is
    interrupted as Ctrl-C interrupts `rag-eval run`, and records itself cancelled. False when its worker
    is gone already."""
    process = ProcessIdentity.parse(record.worker)
    if process is None or process.is_gone() is not False:
        return False
    EvaluationRecords(files.root).update(record.evaluation_id, outcome="cancelled")
    try:
        os.kill(process.pid, signal.SIGINT)
    except ProcessLookupError:
        return False
    return True
