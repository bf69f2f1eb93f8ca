"""An evaluation's per-question results as a LangSmith experiment on the uploaded dataset.

The experiment is a LangSmith project (session) whose reference dataset is the uploaded one; each row
becomes one run linked to the dataset example with the same ``metadata.question_id``, and each finite
score one feedback (key = metric name) on that run, so the web app's comparison view lines experiments
up question by question. NaN or infinite scores are not sent (LangSmith stores numbers) and are counted
in the report instead.

Every write is a synchronous request that raises on failure. The SDK's batch endpoints and background
queue log and swallow errors, which would let a half-logged experiment pass as complete; a small thread
pool makes up for the extra round trips.

The experiment name is the caller's to make unique. If it is taken, the experiment is created under the
name plus a random 6-hex-digit suffix, as the SDK's own ``evaluate`` does; the report gives the name used.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..types import QuestionId
from .datasets import _examples_by_question, _read_dataset
from .errors import LangSmithError, langsmith_errors

if TYPE_CHECKING:  # langsmith takes about 0.4 s to import: only where LangSmith is used
    from langsmith import Client
    from langsmith import schemas as ls_schemas

RUN_NAME = "rag_eval_pipeline"
_NAME_ATTEMPTS = 10
# Feedback may reach LangSmith before its run is queryable; the SDK retries a 404 for that reason.
# Three attempts wait at most ~3 s, instead of the SDK default of ten (minutes with backoff).
_FEEDBACK_ATTEMPTS = 3


@dataclass(frozen=True)
class ExperimentRow:
    """One question's result: what the system returned and its metric values."""

    question_id: QuestionId
    outputs: Mapping[str, Any] = field(default_factory=dict)
    scores: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ExperimentReport:
    name: str
    url: str | None
    n_runs: int
    n_feedback: int
    n_skipped_scores: int = 0  # NaN or infinite scores, not sent
    experiment_id: str = ""
    dataset_id: str = ""


def log_experiment(
    client: Client,
    dataset_name: str,
    experiment_name: str,
    rows: Sequence[ExperimentRow],
    metadata: Mapping[str, Any] | None = None,
    *,
    description: str = "",
    run_name: str = RUN_NAME,
    max_workers: int = 4,
) -> ExperimentReport:
    """Log ``rows`` as the experiment ``experiment_name`` on the LangSmith dataset ``dataset_name``."""
    _check_rows(rows, experiment_name)
    if client.tracing_sample_rate is not None and client.tracing_sample_rate < 1.0:
        raise LangSmithError(
            f"LangSmith: the client samples {client.tracing_sample_rate:.0%} of runs, so the experiment would "
            f"lose rows: use LangSmithSettings.client() or unset LANGSMITH_TRACING_SAMPLING_RATE"
        )
    action = f"logging experiment {experiment_name!r} on dataset {dataset_name!r}"
    with langsmith_errors(action, client.api_url, client.api_key):
        dataset = _read_dataset(client, dataset_name)
        examples, _ = _examples_by_question(client.list_examples(dataset_id=dataset.id), dataset_name)
        missing = [row.question_id for row in rows if row.question_id not in examples]
        if missing:
            shown = ", ".join(repr(q) for q in missing[:5]) + (
                f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            )
            raise LangSmithError(
                f"LangSmith: {len(missing)} question(s) of experiment {experiment_name!r} are not in dataset "
                f"{dataset_name!r} ({shown}): upload the evaluated dataset first (upload_dataset)"
            )
        project_metadata = {**(metadata or {}), "dataset_version": _dataset_version(examples.values())}
        metrics = sorted({key for row in rows for key in row.scores})
        project = _create_project(
            client, experiment_name, dataset.id, project_metadata, description, len(rows), metrics
        )
        n_feedback, n_skipped = _log_rows(client, project, rows, examples, run_name, max_workers)
        client.update_project(project.id, metadata=project_metadata, end_time=dt.datetime.now(dt.UTC))
    return ExperimentReport(
        name=project.name or experiment_name,
        url=_compare_url(project, dataset.id),
        n_runs=len(rows),
        n_feedback=n_feedback,
        n_skipped_scores=n_skipped,
        experiment_id=str(project.id),
        dataset_id=str(dataset.id),
    )


def _check_rows(rows: Sequence[ExperimentRow], experiment_name: str) -> None:
    if not rows:
        raise LangSmithError(f"LangSmith: experiment {experiment_name!r} has no rows to log")
    seen: set[str] = set()
    for row in rows:
        if row.question_id in seen:
            raise LangSmithError(
                f"LangSmith: experiment {experiment_name!r} has two rows for question {row.question_id!r}"
            )
        seen.add(row.question_id)
        for key, value in row.scores.items():
            try:
                float(value)
            except (TypeError, ValueError):
                raise LangSmithError(
                    f"LangSmith: experiment {experiment_name!r}, question {row.question_id!r}: score {key!r} "
                    f"must be a number, got {value!r}"
                ) from None


def _dataset_version(examples: Iterable[ls_schemas.Example]) -> str | None:
    """The newest example change, which the web app uses to show the examples as they were."""
    stamps = [e.modified_at or e.created_at for e in examples]
    return max(stamps).isoformat() if stamps else None


def _create_project(
    client: Client,
    name: str,
    dataset_id: uuid.UUID,
    metadata: dict[str, Any],
    description: str,
    n_examples: int,
    metrics: list[str],
) -> ls_schemas.TracerSession:
    from langsmith import utils as ls_utils

    candidate = name
    for _ in range(_NAME_ATTEMPTS):
        try:
            return client.create_project(
                candidate,
                description=description or None,
                metadata=metadata,
                reference_dataset_id=dataset_id,
                num_examples=n_examples,
                evaluator_keys=metrics,
            )
        except ls_utils.LangSmithConflictError:
            candidate = f"{name}-{uuid.uuid4().hex[:6]}"
    raise LangSmithError(
        f"LangSmith: experiment names {name!r} and {_NAME_ATTEMPTS - 1} suffixed variants are all taken: "
        f"choose another experiment name"
    )


def _log_rows(
    client: Client,
    project: ls_schemas.TracerSession,
    rows: Sequence[ExperimentRow],
    examples: Mapping[QuestionId, ls_schemas.Example],
    run_name: str,
    max_workers: int,
) -> tuple[int, int]:
    """One run plus its feedback per row, rows in parallel; the first failure stops the rest."""
    n_feedback = n_skipped = 0
    with ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix="langsmith-log") as pool:
        futures: list[Future[tuple[int, int]]] = [
            pool.submit(_log_row, client, project, row, examples[row.question_id], run_name) for row in rows
        ]
        try:
            for future in futures:
                sent, skipped = future.result()
                n_feedback += sent
                n_skipped += skipped
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return n_feedback, n_skipped


def _log_row(
    client: Client,
    project: ls_schemas.TracerSession,
    row: ExperimentRow,
    example: ls_schemas.Example,
    run_name: str,
) -> tuple[int, int]:
    run_id = uuid.uuid4()
    now = dt.datetime.now(dt.UTC)
    # No trace_id/dotted_order: those route the run to the background queue, which drops errors.
    client.create_run(
        run_name,
        dict(example.inputs or {}),
        "chain",
        id=run_id,
        session_id=project.id,
        reference_example_id=example.id,
        outputs=dict(row.outputs),
        start_time=now,
        end_time=now,
        extra={
            "metadata": {
                "question_id": row.question_id,
                "example_version": (example.modified_at or example.created_at).isoformat(),
            }
        },
    )
    sent = skipped = 0
    for key, value in sorted(row.scores.items()):
        score = float(value)
        if not math.isfinite(score):
            skipped += 1
            continue
        client.create_feedback(
            run_id,
            key,
            score=score,
            session_id=project.id,
            feedback_id=uuid.uuid4(),
            stop_after_attempt=_FEEDBACK_ATTEMPTS,
        )
        sent += 1
    return sent, skipped


def _compare_url(project: ls_schemas.TracerSession, dataset_id: uuid.UUID) -> str | None:
    """The experiment's page in the web app, built as the SDK's ``evaluate`` builds it."""
    if not project.url:
        return None
    base = project.url.split("?")[0].split("/projects/p/")[0]
    return f"{base}/datasets/{dataset_id}/compare?selectedSessions={project.id}"
