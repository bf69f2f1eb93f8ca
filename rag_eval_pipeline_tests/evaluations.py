"""The tests' evaluations, through the users' path (runner/evaluate.py) on a test instance with the
tests' resources: the same load, checks, plan, sync and execution as `rag-eval run`."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg
import pandas as pd

from rag_eval_pipeline.core.settings.monitoring_settings import EvaluationMode
from rag_eval_pipeline.lib.io_managers import read_current_leaderboard
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline.runner.evaluate import EvaluationOrder, evaluate
from rag_eval_pipeline.runner.outcome import EvaluationOutcome


def evaluate_here(
    instance: dg.DagsterInstance,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    show_progress: bool = False,
    resources: dict[str, object] | None = None,
    *,
    mode: EvaluationMode = "full",
    evaluation_id: str | None = None,
    sample_size: int | None = None,
    force: bool = False,
) -> EvaluationOutcome:
    """`evaluate` in this process on ``instance``, the project's files being those of ``resources``'
    project resource."""
    project = (resources or {}).get("project") or ProjectResource()
    assert isinstance(project, ProjectResource)
    order = EvaluationOrder(
        chunk_configs=chunk_configs,
        profiles=profiles,
        mode=mode,
        sample_size=sample_size,
        force=force,
        evaluation_id=evaluation_id,
        show_progress=show_progress,
    )
    return evaluate(project.files(), order, instance=instance, resources=resources)


def evaluate_board(
    instance: dg.DagsterInstance,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    show_progress: bool = False,
    resources: dict[str, object] | None = None,
    *,
    mode: EvaluationMode = "full",
    evaluation_id: str | None = None,
    sample_size: int | None = None,
    force: bool = False,
) -> tuple[pd.DataFrame | None, list[str]]:
    """`evaluate_here`, then the current leaderboard and each failed run's label, run id and cause."""
    outcome = evaluate_here(
        instance,
        chunk_configs,
        profiles,
        show_progress,
        resources,
        mode=mode,
        evaluation_id=evaluation_id,
        sample_size=sample_size,
        force=force,
    )
    return read_current_leaderboard(resources), outcome.failures
