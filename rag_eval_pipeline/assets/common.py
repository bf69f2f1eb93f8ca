"""What every asset needs: config lookup with clear failures, progress to the run log, provenance."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pandas as pd

from ..core.configs import ChunkConfig, RetrievalProfile
from ..core.datasets import TokenLevelDataset
from ..core.errors import InputError
from ..core.leaderboard import ConfiguredNames
from ..core.progress import LogProgress, Progress, TqdmProgress, fan_out
from ..core.tables import questions_from_frame
from ..evaluation_runs import EvaluationModeResource, evaluation_id_of
from ..resources import ProjectResource

PROGRESS_BAR_ENV = "RAG_EVAL_PROGRESS_BAR"
# Marks a step failure caused by bad user input: `rag-eval` then exits with 2, not 1 (run_failures.py).
BAD_INPUT_METADATA = "rag_eval/bad_input"


def progress_for(context: dg.AssetExecutionContext) -> Progress:
    """Lines with counts and rates in the run log; also a terminal bar when `rag-eval run` asks for one."""
    log_progress = LogProgress(context.log.info)
    if os.environ.get(PROGRESS_BAR_ENV) == "1":
        return fan_out(log_progress, TqdmProgress())
    return log_progress


@contextmanager
def input_errors_fail_the_step(prefix: str = "") -> Iterator[None]:
    """Bad user input fails the step with its message (file, key, remedy) instead of a traceback."""
    try:
        yield
    except InputError as exc:
        raise bad_input_failure(f"{prefix}{exc}") from exc


def bad_input_failure(message: str) -> dg.Failure:
    """A step failure that says what the user must fix; `rag-eval` reports it with exit code 2."""
    return dg.Failure(message, metadata={BAD_INPUT_METADATA: True})


def chunk_config_for(project: ProjectResource, name: str) -> ChunkConfig:
    with input_errors_fail_the_step():
        return project.load_configs().chunk_config(name)


def profile_for(project: ProjectResource, name: str) -> RetrievalProfile:
    with input_errors_fail_the_step():
        return project.load_configs().profile(name)


def configured_names(project: ProjectResource, log: dg.DagsterLogManager) -> ConfiguredNames | None:
    """The chunk configs and profiles configured now, for the summary assets that span every partition
    (removed ones included: their partitions and history are kept). None, with a warning, when the
    config files cannot be read: a summary still runs, it just cannot tell what was removed."""
    try:
        configs = project.load_configs()
    except InputError as exc:
        log.warning(f"the config files could not be read, so no partition counts as removed: {exc}")
        return None
    return ConfiguredNames(
        frozenset(c.name for c in configs.chunk_configs), frozenset(p.name for p in configs.profiles)
    )


def now_utc() -> datetime:
    return datetime.now(UTC)


def with_columns(frame: pd.DataFrame, **columns: Any) -> pd.DataFrame:
    """Provenance first (run id, partition, hashes), then the data columns."""
    front = pd.DataFrame({name: [value] * len(frame) for name, value in columns.items()}, index=frame.index)
    return pd.concat([front, frame], axis=1)


def evaluated_questions(
    project: ProjectResource, evaluation: EvaluationModeResource, eval_questions: pd.DataFrame
) -> TokenLevelDataset:
    """The questions this run evaluates: all, or quick mode's seeded sample (the same in every asset of
    the partition, so retrieval, metrics and answers cover the same questions)."""
    questions = questions_from_frame(eval_questions)
    with input_errors_fail_the_step():
        if evaluation.checked_mode() == "full":
            return questions
        return evaluation.select(questions, project.load_monitoring_settings().quick)


def dataset_hashes(eval_questions: pd.DataFrame) -> dict[str, str]:
    """The hashes of the whole evaluated dataset, also in quick mode (not of the sample): what makes a
    quick run comparable with the full runs before it."""
    if {"dataset_sha256", "answers_sha256"} <= set(eval_questions.columns) and len(eval_questions):
        first = eval_questions.iloc[0]
        return {
            "dataset_sha256": str(first["dataset_sha256"]),
            "answers_sha256": str(first["answers_sha256"]),
        }
    questions = questions_from_frame(eval_questions)
    return {"dataset_sha256": questions.sha256, "answers_sha256": questions.answers_sha256}


def evaluation_columns(
    context: dg.AssetExecutionContext, evaluation: EvaluationModeResource
) -> dict[str, str]:
    """Which evaluation a row belongs to and in which mode: what `rag-eval compare` and the regression
    checks group and filter by."""
    with input_errors_fail_the_step():
        mode = evaluation.checked_mode()
    return {"evaluation_id": evaluation_id_of(context.run), "evaluation_mode": mode}
