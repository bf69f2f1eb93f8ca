"""The main job: ingestion, chunking per chunk config, evaluation per chunk config x profile, then
the leaderboard, as one evaluation (one Dagster run per stage and partition, tagged with one evaluation
id). Run here in process; `webserver.py` submits the same plan to a running `dagster dev`."""

from __future__ import annotations

import os
import re
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
from .core.monitoring import EvaluationMode
from .core.text_table import format_table
from .evaluation_runs import evaluation_run_config, evaluation_tags, new_evaluation_id
from .io_managers import ParquetIOManagerFactory

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
# The quiet console of in-process runs: the progress bar is the terminal's view, the UI has the logs.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


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
    home.mkdir(exist_ok=True)
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), config_dir=str(root))) as instance:
        yield instance


@dataclass(frozen=True)
class PlannedRun:
    """One Dagster run of an evaluation: a stage, and the partition it materializes."""

    stage: Stage
    label: str
    chunk_config: str | None = None
    profile: str | None = None

    @property
    def job_name(self) -> str:
        return STAGE_JOBS[self.stage]

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
    plan = [PlannedRun("ingestion", "corpus and questions")]
    plan += [PlannedRun("chunking", f"chunks + index {c}", chunk_config=c) for c in selected_configs]
    plan += [
        PlannedRun("evaluation", f"evaluate {c} x {p}", chunk_config=c, profile=p)
        for c in selected_configs
        for p in selected_profiles
    ]
    plan.append(PlannedRun("leaderboard", "leaderboard"))
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
    """Materialize every asset for every (selected) partition in this process, one run per partition,
    all tagged with one evaluation id (a new one unless given); a failed partition is reported and the
    others still run. Returns the leaderboard and the failures."""
    from tqdm import tqdm

    from .definitions import build_definitions
    from .resources import ProjectResource
    from .sensors import sync_partitions

    project = (resources or {}).get("project") or ProjectResource()
    assert isinstance(project, ProjectResource)
    configs = project.load_configs()
    changes = sync_partitions(instance, configs)
    plan = plan_main_job(configs, chunk_configs, profiles)
    for name in changes.removed_chunk_configs + changes.removed_profiles:
        print(f"note: {name} is no longer configured; its partitions and history are kept", file=sys.stderr)

    tags = evaluation_tags(evaluation_id or new_evaluation_id(), mode)
    defs = build_definitions(resources)
    failures: list[str] = []
    steps = tqdm(plan, desc="main job", unit="run", disable=not show_progress)
    for planned in steps:
        steps.set_postfix_str(planned.label)
        result = defs.resolve_job_def(planned.job_name).execute_in_process(
            instance=instance,
            partition_key=planned.partition_key,
            run_config={**QUIET_LOGS, **run_config_for(planned, mode, sample_size)},
            tags=tags,
            raise_on_error=False,
        )
        if not result.success:
            failures.append(f"{planned.label} (run {result.run_id}): {failure_message_of(result)}")
            if planned.stage == "ingestion":
                break
    board = read_current_leaderboard(resources)
    return board, failures


def failure_message_of(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data is not None and event.step_failure_data.error:
            return failure_text(event.step_failure_data.error.message)
    return "the run failed (see its log in the Dagster UI)"


def failure_text(message: str) -> str:
    """A step's error without the class path Dagster puts before a `dg.Failure`'s own message (which
    already names the file, key and remedy)."""
    return re.sub(r"^dagster\.[\w.]*\.Failure: ", "", message.strip())


def read_current_leaderboard(resources: Mapping[str, object] | None) -> pd.DataFrame | None:
    factory = (resources or {}).get("io_manager") or ParquetIOManagerFactory()
    assert isinstance(factory, ParquetIOManagerFactory)
    path = Path(factory.base_dir) / "current" / "leaderboard.parquet"
    return pd.read_parquet(path) if path.exists() else None


def format_leaderboard(board: pd.DataFrame) -> str:
    """A plain-text table: mean and bootstrap 95% CI per headline retrieval metric, then the answer
    metrics' means (n/a where answers were not evaluated or the judge did not run)."""
    answer_columns = [m for m in ANSWER_COLUMNS if f"{m}_mean" in board.columns]
    header = ["rank", "chunk_config", "profile", "k", *LEADERBOARD_COLUMNS, *answer_columns]
    rows = []
    for _, row in board.iterrows():
        cells = [str(row["rank"]), str(row["chunk_config"]), profile_label(row), str(row["top_k"])]
        cells += [mean_ci(row, metric) for metric in LEADERBOARD_COLUMNS]
        for metric in answer_columns:
            value = row[f"{metric}_mean"]
            cells.append("n/a" if pd.isna(value) else f"{value:.3f}")
        rows.append(cells)
    return format_table(header, rows)


def mean_ci(row: pd.Series, metric: str) -> str:
    mean, low, high = (row[f"{metric}_{part}"] for part in ("mean", "ci_low", "ci_high"))
    return "n/a" if pd.isna(mean) else f"{mean:.3f} [{low:.2f}-{high:.2f}]"
