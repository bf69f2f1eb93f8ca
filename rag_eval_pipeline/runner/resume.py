"""`rag-eval run --resume EVALUATION_ID`: what of an evaluation did not succeed, read from the instance.

Every run of an evaluation carries its selection and mode (plan.EvaluationRequest's tags), so its
plan can be made again; the runs that succeeded in it (by job and partition) are left out. Evaluations
whose runs do not carry the selection (the nightly schedule's, older ones) resume the runs they made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ..core.errors import InputError
from ..core.runs.run_tags import EVALUATION_ID_TAG, MODE_TAG, PARTITION_TAG
from ..core.settings.configs import PipelineConfigs
from ..core.settings.monitoring_settings import EvaluationMode
from .outcome import FAILED, SUCCEEDED
from .plan import STAGES, EvaluationRequest, PlannedRun, plan_main_job
from .run_status import UnknownReference, fail_orphaned_runs


@dataclass(frozen=True)
class Resume:
    request: EvaluationRequest
    planned: tuple[PlannedRun, ...]  # the evaluation's whole plan
    to_run: tuple[PlannedRun, ...]  # what did not succeed, in plan order
    evaluated_before: bool  # an evaluation run of it succeeded: the leaderboard has something new

    @property
    def succeeded(self) -> int:
        return len(self.planned) - len(self.to_run)


def plan_resume(instance: dg.DagsterInstance, evaluation_id: str, configs: PipelineConfigs) -> Resume:
    """The runs of ``evaluation_id`` that did not succeed, with its mode and sample size; the leaderboard
    again when anything else runs. Runs whose process is gone are marked failed first; an evaluation
    with runs still in progress is refused (they would race with the resumed ones)."""
    fail_orphaned_runs(instance)
    records = instance.get_run_records(filters=dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id}))
    if not records:
        raise UnknownReference(
            f"no evaluation {evaluation_id!r} on this Dagster instance: `rag-eval list` shows the recent "
            "evaluations (give the whole id)"
        )
    runs = [r.dagster_run for r in records]
    active = [r for r in runs if r.status not in SUCCEEDED | FAILED]
    if active:
        shown = ", ".join(f"{r.run_id[:8]} ({r.status.value})" for r in active[:5])
        raise InputError(
            f"evaluation {evaluation_id} still has {len(active)} run(s) in progress ({shown}): wait for them "
            f"(`rag-eval status {evaluation_id}`) or terminate them in the Dagster UI, then resume"
        )
    request = next((req for r in runs if (req := EvaluationRequest.of_tags(r.tags)) is not None), None)
    if request is not None:
        try:
            planned = plan_main_job(configs, request.chunk_configs, request.profiles)
        except InputError as exc:
            raise InputError(f"cannot resume evaluation {evaluation_id} as it was planned: {exc}") from None
    else:
        planned = planned_from_runs(runs)
        mode: EvaluationMode = "quick" if runs[0].tags.get(MODE_TAG) == "quick" else "full"
        request = EvaluationRequest.of_plan(planned, evaluation_id, mode, sample_size_of(runs))
    done = {(r.job_name, r.tags.get(PARTITION_TAG, "")) for r in runs if r.status in SUCCEEDED}
    to_run = [p for p in planned if p.key not in done and p.stage != "leaderboard"]
    leaderboard = next(p for p in planned if p.stage == "leaderboard")
    if to_run or leaderboard.key not in done:
        to_run.append(leaderboard)
    evaluated = any(p.stage == "evaluation" and p.key in done for p in planned)
    return Resume(request, tuple(planned), tuple(to_run), evaluated)


def planned_from_runs(runs: Sequence[dg.DagsterRun]) -> list[PlannedRun]:
    """The stages and partitions an evaluation's runs covered, in plan order, and the leaderboard."""
    found = {
        planned
        for r in runs
        if (planned := PlannedRun.of_run(r.job_name, r.tags.get(PARTITION_TAG, ""))) is not None
    }
    found.add(PlannedRun.of("leaderboard"))
    return sorted(found, key=lambda p: (STAGES.index(p.stage), p.chunk_config or "", p.profile or ""))


def sample_size_of(runs: Sequence[dg.DagsterRun]) -> int | None:
    """The quick-mode sample size an evaluation run was configured with (run config, as the launchpad
    and the schedule set it)."""
    for run in runs:
        run_config: dict[str, Any] = dict(run.run_config or {})
        resources: dict[str, Any] = run_config.get("resources") or {}
        config: dict[str, Any] = (resources.get("evaluation") or {}).get("config") or {}
        if isinstance(config.get("sample_size"), int):
            return int(config["sample_size"])
    return None
