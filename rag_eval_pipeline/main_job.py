"""The main job: ingestion, chunking per chunk config, evaluation per chunk config x profile, then
the leaderboard, as one evaluation (one Dagster run per stage and partition, tagged with one evaluation
id). Run here in process; `webserver.py` submits the same plan to a running `dagster dev`."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import dagster as dg
import pandas as pd

from .assets.evaluation import profile_label
from .core.configs import PipelineConfigs
from .core.errors import InputError
from .core.files import make_folder
from .core.leaderboard import footnotes, has_notes, rank_label, row_note
from .core.monitoring import EvaluationMode
from .core.processes import ProcessIdentity
from .core.text_table import format_table
from .evaluation_runs import (
    EVALUATION_ID_TAG,
    MODE_TAG,
    evaluation_run_config,
    evaluation_tags,
    new_evaluation_id,
)
from .io_managers import ParquetIOManagerFactory
from .run_failures import RunFailure, failure_of_result

warnings.filterwarnings("ignore", category=dg.BetaWarning)  # the partition mapping of partitions.py

from .partitions import CHUNK_CONFIG, PROFILE, chunk_config_partitions, evaluation_partitions  # noqa: E402

LEADERBOARD_COLUMNS = ("span_recall", "span_precision", "span_iou", "recall_at_k", "mrr")
ANSWER_COLUMNS = ("keyword", "semantic_dynamic", "llm_judge")
# Dagster's own tag for a run's partition key ("<chunk_config>|<profile>" for the evaluation job).
PARTITION_TAG = "dagster/partition"

Stage = Literal["ingestion", "chunking", "evaluation", "leaderboard"]
STAGES: tuple[Stage, ...] = get_args(Stage)
STAGE_JOBS: Mapping[Stage, str] = {
    "ingestion": "ingestion_job",
    "chunking": "chunking_job",
    "evaluation": "evaluation_job",
    "leaderboard": "leaderboard_job",
}
SUCCEEDED = frozenset({dg.DagsterRunStatus.SUCCESS})
FAILED = frozenset({dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED})
# In-process runs print nothing to the terminal themselves: Dagster's console would print a failed
# step's traceback (twice) and its own notes, drowning what `rag-eval` says in one line (the cause, the
# counts). The progress bar is the terminal's view; each run's warnings follow it (`run_warnings`); the
# UI has every log line.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# Dagster's note for each partition an input skips on purpose (`allow_missing_partitions`): expected
# whenever a subset is evaluated, so not repeated on the terminal.
_DAGSTER_NOTES = ("Couldn't load partition ",)


@contextmanager
def project_instance(root: Path) -> Iterator[dg.DagsterInstance]:
    """$DAGSTER_HOME when set, else the project's own dagster.yaml (storage under .dagster/). Its storage
    paths are relative to the working directory, as for `dagster dev`: call it from the project root
    (`main` changes there)."""
    from dagster._core.instance.ref import InstanceRef

    if os.environ.get("DAGSTER_HOME"):
        with dg.DagsterInstance.get() as instance:
            yield instance
        return
    home = root / ".dagster"
    make_folder(home)  # a read-only project fails here with the folder and the OS error
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), config_dir=str(root))) as instance:
        yield instance


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


# The tags that let `rag-eval` find out later what an evaluation was asked to do (`run --resume`) and
# whether the process executing a run still lives (`status`, `list`): run_status.py reads them.
PLAN_CHUNK_CONFIGS_TAG = "rag_eval/chunk_configs"
PLAN_PROFILES_TAG = "rag_eval/profiles"
SAMPLE_SIZE_TAG = "rag_eval/sample_size"
PROCESS_TAG = "rag_eval/process"


def process_tags() -> dict[str, str]:
    """Tags a run executed by this process carries: host, pid, boot id and process start time."""
    return {PROCESS_TAG: ProcessIdentity.current().to_text()}


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

    def tags(self) -> dict[str, str]:
        tags = {
            **evaluation_tags(self.evaluation_id, self.mode),
            PLAN_CHUNK_CONFIGS_TAG: ",".join(self.chunk_configs),
            PLAN_PROFILES_TAG: ",".join(self.profiles),
        }
        if self.sample_size is not None:
            tags[SAMPLE_SIZE_TAG] = str(self.sample_size)
        return tags


RunState = Literal["succeeded", "failed", "not run"]


@dataclass(frozen=True)
class RunOutcome:
    planned: PlannedRun
    state: RunState
    run_id: str | None = None
    failure: RunFailure | None = None
    blocked_by: str = ""  # why a run that did not run did not start: what failed before it

    def describe(self) -> str:
        return f"{self.planned.label} (run {self.run_id}): {self.failure}"


@dataclass(frozen=True)
class EvaluationOutcome:
    """What one evaluation (or its resumption) planned, ran, and how each run ended."""

    request: EvaluationRequest
    runs: tuple[RunOutcome, ...]

    def of_state(self, state: RunState) -> list[RunOutcome]:
        return [r for r in self.runs if r.state == state]

    @property
    def failures(self) -> list[str]:
        return [r.describe() for r in self.of_state("failed")]

    @property
    def bad_input(self) -> bool:
        return any(r.failure is not None and r.failure.bad_input for r in self.of_state("failed"))

    @property
    def exit_code(self) -> int:
        """2 when a run failed on bad input (the user must fix a file), 1 when one failed otherwise."""
        return 2 if self.bad_input else 1 if self.of_state("failed") else 0

    @property
    def leaderboard_run_id(self) -> str | None:
        return next((r.run_id for r in self.of_state("succeeded") if r.planned.stage == "leaderboard"), None)

    def counts(self) -> str:
        ran = len(self.runs) - len(self.of_state("not run"))
        return (
            f"{len(self.runs)} runs planned, {ran} ran ({len(self.of_state('succeeded'))} succeeded, "
            f"{len(self.of_state('failed'))} failed), {len(self.of_state('not run'))} not run"
        )

    def not_run_lines(self) -> list[str]:
        """One line per cause: "ingestion failed, so 4 runs did not start: ..."."""
        by_cause: dict[str, list[str]] = {}
        for run in self.of_state("not run"):
            by_cause.setdefault(run.blocked_by, []).append(run.planned.label)
        return [
            f"{cause}, so {len(labels)} run{'s' if len(labels) > 1 else ''} did not start: {', '.join(labels)}"
            for cause, labels in by_cause.items()
        ]


def blocked_reason(planned: PlannedRun, done: Sequence[RunOutcome], evaluated_before: bool = False) -> str:
    """Why ``planned`` must not start after ``done`` ("" when it may): each stage reads what the one
    before it wrote, and after a failure that would be an older version (stale chunks, no questions).
    The leaderboard needs one evaluation run of this evaluation to have succeeded (``evaluated_before``:
    in the part of it that ran before a resume)."""
    if planned.stage == "ingestion":
        return ""
    if any(r.planned.stage == "ingestion" and r.state != "succeeded" for r in done):
        return "ingestion failed"
    if planned.stage == "evaluation" and any(
        r.planned.stage == "chunking"
        and r.planned.chunk_config == planned.chunk_config
        and r.state != "succeeded"
        for r in done
    ):
        return f"chunking {planned.chunk_config} failed"
    evaluations = [r for r in done if r.planned.stage == "evaluation"]
    if (
        planned.stage == "leaderboard"
        and evaluations
        and not evaluated_before
        and all(r.state != "succeeded" for r in evaluations)
    ):
        return "no evaluation run succeeded"
    return ""


def execute_plan(
    instance: dg.DagsterInstance,
    request: EvaluationRequest,
    plan: Sequence[PlannedRun],
    resources: dict[str, object] | None = None,
    show_progress: bool = True,
    evaluated_before: bool = False,
) -> EvaluationOutcome:
    """Each planned run in this process, in order, tagged with the request and this process; a failed
    partition is reported and the others still run, except those that need what failed."""
    from tqdm import tqdm

    from .definitions import build_definitions

    tags = {**request.tags(), **process_tags()}
    defs = build_definitions(resources)
    outcomes: list[RunOutcome] = []
    steps = tqdm(plan, desc="main job", unit="run", disable=not show_progress)
    for planned in steps:
        blocked = blocked_reason(planned, outcomes, evaluated_before)
        if blocked:
            outcomes.append(RunOutcome(planned, "not run", blocked_by=blocked))
            continue
        steps.set_postfix_str(planned.label)
        result = defs.resolve_job_def(planned.job_name).execute_in_process(
            instance=instance,
            partition_key=planned.partition_key,
            run_config={**QUIET_LOGS, **run_config_for(planned, request.mode, request.sample_size)},
            tags=tags,
            raise_on_error=False,
        )
        for line in run_warnings(instance, result.run_id):
            tqdm.write(f"warning: {planned.label}: {line}", file=sys.stderr)
        if result.success:
            outcomes.append(RunOutcome(planned, "succeeded", result.run_id))
        else:
            outcomes.append(RunOutcome(planned, "failed", result.run_id, failure_of_result(result)))
    return EvaluationOutcome(request, tuple(outcomes))


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


def sync_configs(instance: dg.DagsterInstance, configs: PipelineConfigs) -> None:
    """A partition for every entry of the config files (a removed entry keeps its partitions)."""
    from .sensors import sync_partitions

    changes = sync_partitions(instance, configs)
    for name in changes.removed_chunk_configs + changes.removed_profiles:
        print(f"note: {name} is no longer configured; its partitions and history are kept", file=sys.stderr)


def evaluate_in_process(
    instance: dg.DagsterInstance,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    show_progress: bool = True,
    resources: dict[str, object] | None = None,
    *,
    mode: EvaluationMode = "full",
    evaluation_id: str | None = None,
    sample_size: int | None = None,
) -> EvaluationOutcome:
    """Materialize every asset for every (selected) partition in this process, one run per partition,
    all tagged with one evaluation id (a new one unless given)."""
    from .resources import ProjectResource

    project = (resources or {}).get("project") or ProjectResource()
    assert isinstance(project, ProjectResource)
    configs = project.load_configs()
    sync_configs(instance, configs)
    plan = plan_main_job(configs, chunk_configs, profiles)
    request = EvaluationRequest.of_plan(plan, evaluation_id or new_evaluation_id(), mode, sample_size)
    return execute_plan(instance, request, plan, resources, show_progress)


def run_main_job(
    instance: dg.DagsterInstance,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    show_progress: bool = True,
    resources: dict[str, object] | None = None,
    *,
    mode: EvaluationMode = "full",
    evaluation_id: str | None = None,
    sample_size: int | None = None,
) -> tuple[pd.DataFrame | None, list[str]]:
    """`evaluate_in_process`, then the current leaderboard and each failed run's label, run id and
    cause."""
    outcome = evaluate_in_process(
        instance,
        chunk_configs,
        profiles,
        show_progress,
        resources,
        mode=mode,
        evaluation_id=evaluation_id,
        sample_size=sample_size,
    )
    return read_current_leaderboard(resources), outcome.failures


def read_current_leaderboard(resources: Mapping[str, object] | None) -> pd.DataFrame | None:
    factory = (resources or {}).get("io_manager") or ParquetIOManagerFactory()
    assert isinstance(factory, ParquetIOManagerFactory)
    path = Path(factory.base_dir) / "current" / "leaderboard.parquet"
    return pd.read_parquet(path) if path.exists() else None


def format_leaderboard(board: pd.DataFrame) -> str:
    """A plain-text table: mean and bootstrap 95% CI per headline retrieval metric, then the answer
    metrics' means (n/a where answers were not evaluated or the judge did not run); a `note` column and
    a legend under the table when rows are removed (rank `-`) or not comparable (rank `3*`)."""
    answer_columns = [m for m in ANSWER_COLUMNS if f"{m}_mean" in board.columns]
    notes = has_notes(board)
    header = ["rank", "chunk_config", "profile", "k", *LEADERBOARD_COLUMNS, *answer_columns]
    header += ["note"] if notes else []
    rows = []
    for _, row in board.iterrows():
        cells = [rank_label(row), str(row["chunk_config"]), profile_label(row), str(row["top_k"])]
        cells += [mean_ci(row, metric) for metric in LEADERBOARD_COLUMNS]
        for metric in answer_columns:
            value = row[f"{metric}_mean"]
            cells.append("n/a" if pd.isna(value) else f"{value:.3f}")
        cells += [row_note(row)] if notes else []
        rows.append(cells)
    return "\n".join([format_table(header, rows), *footnotes(board)])


def mean_ci(row: pd.Series, metric: str) -> str:
    mean, low, high = (row[f"{metric}_{part}"] for part in ("mean", "ci_low", "ci_high"))
    return "n/a" if pd.isna(mean) else f"{mean:.3f} [{low:.2f}-{high:.2f}]"
