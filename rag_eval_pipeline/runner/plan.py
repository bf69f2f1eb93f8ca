"""The plan of one evaluation: ingestion, chunking per chunk config, evaluation per chunk config x
profile, then the leaderboard (one Dagster run per stage and partition; lib/stages.py names each run's
assets: the leaderboard's also judges answers and assesses the question set's health), and the request
its runs carry as tags, so `rag-eval run --resume` can plan it again. runner/in_process.py executes a plan here,
runner/launch.py submits it to a running `dagster dev`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import dagster as dg

from ..core.errors import InputError
from ..core.runs.run_tags import (
    EVALUATION_ID_TAG,
    MODE_TAG,
    PLAN_CHUNK_CONFIGS_TAG,
    PLAN_PROFILES_TAG,
    PLANNED_EVALUATION_TAG,
    SAMPLE_SIZE_TAG,
)
from ..core.settings.configs import PipelineConfigs, RetrievalProfile
from ..core.settings.monitoring_settings import EvaluationMode
from ..lib.evaluation_runs import evaluation_run_config, evaluation_tags
from ..lib.partitions import CHUNK_CONFIG, PROFILE, chunk_config_partitions, evaluation_partitions

Stage = Literal["ingestion", "chunking", "evaluation", "leaderboard"]
STAGES: tuple[Stage, ...] = get_args(Stage)
STAGE_JOBS: Mapping[Stage, str] = {
    "ingestion": "ingestion_job",
    "chunking": "chunking_job",
    "evaluation": "evaluation_job",
    "leaderboard": "leaderboard_job",
}


@dataclass(frozen=True)
class PlannedRun:
    """One Dagster run of an evaluation: a stage, and the partition it materializes."""

    stage: Stage
    label: str
    chunk_config: str | None = None
    profile: str | None = None

    @staticmethod
    def of(stage: Stage, chunk_config: str | None = None, profile: str | None = None) -> PlannedRun:
        label = {
            "ingestion": "corpus and questions",
            "chunking": f"chunks + index {chunk_config}",
            "evaluation": f"evaluate {chunk_config} x {profile}",
            "leaderboard": "leaderboard",
        }[stage]
        return PlannedRun(stage, label, chunk_config, profile)

    @staticmethod
    def of_run(job_name: str, partition: str) -> PlannedRun | None:
        """The planned run a Dagster run of the main job's jobs executed (None for other jobs)."""
        stage = next((s for s, job in STAGE_JOBS.items() if job == job_name), None)
        if stage == "evaluation" and "|" in partition:
            chunk_config, profile = partition.split("|", 1)
            return PlannedRun.of(stage, chunk_config, profile)
        if stage == "chunking" and partition:
            return PlannedRun.of(stage, partition)
        return PlannedRun.of(stage) if stage in ("ingestion", "leaderboard") else None

    @property
    def job_name(self) -> str:
        return STAGE_JOBS[self.stage]

    @property
    def key(self) -> tuple[str, str]:
        """What tells this run from the others of its evaluation on the instance: job and partition tag."""
        return self.job_name, str(self.partition_key or "")

    @property
    def partition_key(self) -> str | None:
        if self.stage == "evaluation":
            return dg.MultiPartitionKey({CHUNK_CONFIG: str(self.chunk_config), PROFILE: str(self.profile)})
        return self.chunk_config if self.stage == "chunking" else None

    def partition_tags(self) -> dict[str, str]:
        """The tags Dagster reads a launched run's partition from (the UI's launchpad sets the same)."""
        key = self.partition_key
        if key is None:
            return {}
        definition = evaluation_partitions if self.stage == "evaluation" else chunk_config_partitions
        return dict(definition.get_tags_for_partition_key(key))


def plan_main_job(
    configs: PipelineConfigs,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
) -> list[PlannedRun]:
    """Ingestion, then each selected chunk config, then every selected config x profile, then the
    leaderboard: each stage needs the one before it."""
    selected_configs = _select("chunk config", [c.name for c in configs.chunk_configs], chunk_configs)
    selected_profiles = _select("profile", [p.name for p in configs.profiles], profiles)
    plan = [PlannedRun.of("ingestion")]
    plan += [PlannedRun.of("chunking", c) for c in selected_configs]
    plan += [PlannedRun.of("evaluation", c, p) for c in selected_configs for p in selected_profiles]
    plan.append(PlannedRun.of("leaderboard"))
    return plan


def _select(kind: str, known: list[str], wanted: Sequence[str] | None) -> list[str]:
    if not wanted:
        return known
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise InputError(f"unknown {kind}(s) {', '.join(unknown)}; configured: {', '.join(known)}")
    return list(dict.fromkeys(wanted))


def run_config_for(run: PlannedRun, mode: EvaluationMode, sample_size: int | None = None) -> dict[str, Any]:
    """Only the evaluation job has the quick/full switch (the `evaluation` resource)."""
    return evaluation_run_config(mode, sample_size) if run.stage == "evaluation" else {}


@dataclass(frozen=True)
class EvaluationRequest:
    """What one evaluation was asked to do: its id, mode and selection, kept as tags on every run."""

    evaluation_id: str
    mode: EvaluationMode
    chunk_configs: tuple[str, ...]
    profiles: tuple[str, ...]
    sample_size: int | None = None

    @staticmethod
    def of_plan(
        plan: Sequence[PlannedRun], evaluation_id: str, mode: EvaluationMode, sample_size: int | None
    ) -> EvaluationRequest:
        """The plan's selection, written out (not "all": the configs may change before a resume)."""
        chunk_configs = [r.chunk_config for r in plan if r.stage == "chunking" and r.chunk_config]
        profiles = [r.profile for r in plan if r.stage == "evaluation" and r.profile]
        return EvaluationRequest(
            evaluation_id, mode, tuple(chunk_configs), tuple(dict.fromkeys(profiles)), sample_size
        )

    @staticmethod
    def of_tags(tags: Mapping[str, str]) -> EvaluationRequest | None:
        """None for runs that do not carry the selection (the nightly schedule's, older ones, and the
        resumed runs of those, whose request had no chunking to name)."""
        if EVALUATION_ID_TAG not in tags or not tags.get(PLAN_CHUNK_CONFIGS_TAG):
            return None
        size = tags.get(SAMPLE_SIZE_TAG, "")
        return EvaluationRequest(
            tags[EVALUATION_ID_TAG],
            "quick" if tags.get(MODE_TAG) == "quick" else "full",
            tuple(n for n in tags[PLAN_CHUNK_CONFIGS_TAG].split(",") if n),
            tuple(n for n in tags.get(PLAN_PROFILES_TAG, "").split(",") if n),
            int(size) if size.isdigit() else None,
        )

    def profiles_of(self, configs: PipelineConfigs) -> list[RetrievalProfile]:
        """The configured profiles it evaluates (their versions: the run record's snapshot)."""
        return [p for p in configs.profiles if p.name in self.profiles]

    def tags(self) -> dict[str, str]:
        """The request, and the mark that its plan runs its own downstream stages (automation ignores
        its updates: defs/automation.py)."""
        tags = {
            **evaluation_tags(self.evaluation_id, self.mode),
            PLANNED_EVALUATION_TAG: "true",
            PLAN_CHUNK_CONFIGS_TAG: ",".join(self.chunk_configs),
            PLAN_PROFILES_TAG: ",".join(self.profiles),
        }
        if self.sample_size is not None:
            tags[SAMPLE_SIZE_TAG] = str(self.sample_size)
        return tags
