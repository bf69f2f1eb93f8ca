"""`rag-eval run | status | list | regenerate-questions`: evaluations on the project's Dagster instance.

One `rag-eval run` is one evaluation: a Dagster run per stage and partition (ingestion, chunking per
chunk config, evaluation per chunk config x profile, leaderboard), all tagged with one evaluation id, so
`status` and `list` (and the UI, filtered by the tag) see them as one. The runs execute here, in process
(the default), or are submitted to a running `dagster dev` whose daemon executes them (`--launch`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import dagster as dg
import pandas as pd
import yaml

from .core.configs import PipelineConfigs
from .core.errors import ConfigError, InputError
from .core.generation.settings import TokenLevelGenerator, load_generation_settings
from .core.monitoring import EVALUATION_MODES, EvaluationMode
from .evaluation_runs import (
    EVALUATION_ID_TAG,
    MODE_TAG,
    evaluation_id_of,
    evaluation_run_config,
    evaluation_tags,
    new_evaluation_id,
)
from .io_managers import ParquetIOManagerFactory, default_warehouse_dir, history_path

warnings.filterwarnings("ignore", category=dg.BetaWarning)  # the partition mapping of partitions.py

from .partitions import CHUNK_CONFIG, PROFILE, chunk_config_partitions, evaluation_partitions  # noqa: E402

if TYPE_CHECKING:
    from .resources import ProjectResource

LEADERBOARD_COLUMNS = ("span_recall", "span_precision", "span_iou", "recall_at_k", "mrr")
ANSWER_COLUMNS = ("keyword", "semantic_dynamic", "llm_judge")
# The headline metrics `status` shows per evaluated partition (retrieval_metrics_summary columns).
STATUS_METRICS = ("span_recall", "span_iou", "recall_at_k", "mrr")
DEFAULT_LAUNCH_URL = "http://127.0.0.1:3000"
# Dagster's own tag for a run's partition key ("<chunk_config>|<profile>" for the evaluation job).
PARTITION_TAG = "dagster/partition"
SENSOR_TAG = "dagster/sensor_name"
SCHEDULE_TAG = "dagster/schedule_name"

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


class LaunchError(Exception):
    """The webserver `--launch` points at cannot take the runs (not there, not Dagster, no such job)."""


class UnknownReference(InputError):
    """`status REF` found no run and no evaluation (or several runs) for REF."""


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


# ---------------------------------------------------------------------------------------------------
# run: the plan, in process or launched


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
            failures.append(f"{planned.label} (run {result.run_id}): {_failure_message(result)}")
            if planned.stage == "ingestion":
                break
    board = read_current_leaderboard(resources)
    return board, failures


def _failure_message(result: dg.ExecuteInProcessResult) -> str:
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
        cells = [str(row["rank"]), str(row["chunk_config"]), str(row["profile"]), str(row["top_k"])]
        cells += [_mean_ci(row, metric) for metric in LEADERBOARD_COLUMNS]
        for metric in answer_columns:
            value = row[f"{metric}_mean"]
            cells.append("n/a" if pd.isna(value) else f"{value:.3f}")
        rows.append(cells)
    return format_table(header, rows)


def _mean_ci(row: pd.Series, metric: str) -> str:
    return f"{row[f'{metric}_mean']:.3f} [{row[f'{metric}_ci_low']:.2f}-{row[f'{metric}_ci_high']:.2f}]"


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, a dashed rule under the header."""
    table = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# run --launch: through the webserver's GraphQL API


@dataclass(frozen=True)
class RepositoryAddress:
    location: str
    repository: str

    def selector(self) -> dict[str, str]:
        return {"repositoryLocationName": self.location, "repositoryName": self.repository}


_WORKSPACE_QUERY = """
query RagEvalWorkspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name repositories { name jobs { name } } }
          ... on PythonError { message }
        }
      }
    }
    ... on PythonError { message }
  }
}
"""
_ADD_PARTITION_MUTATION = """
mutation RagEvalAddPartition($repo: RepositorySelector!, $name: String!, $key: String!) {
  addDynamicPartition(repositorySelector: $repo, partitionsDefName: $name, partitionKey: $key) {
    __typename
    ... on Error { message }
  }
}
"""
_LAUNCH_MUTATION = """
mutation RagEvalLaunch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on Error { message }
  }
}
"""
_STATUS_QUERY = """
query RagEvalStatuses($ids: [String]) {
  runsOrError(filter: {runIds: $ids}) {
    __typename
    ... on Runs { results { runId status } }
    ... on Error { message }
  }
}
"""
_FAILURE_QUERY = """
query RagEvalFailure($runId: ID!, $cursor: String) {
  logsForRun(runId: $runId, afterCursor: $cursor) {
    __typename
    ... on EventConnection {
      cursor
      hasMore
      events {
        __typename
        ... on ExecutionStepFailureEvent { stepKey error { message } }
        ... on RunFailureEvent { message }
      }
    }
    ... on Error { message }
  }
}
"""


class DagsterWebserver:
    """The GraphQL API of `dagster dev` (or any Dagster webserver): plain HTTP POSTs to /graphql."""

    def __init__(self, url: str, timeout_s: float = 60.0) -> None:
        self.url = (url if "://" in url else f"http://{url}").rstrip("/")
        self.timeout_s = timeout_s

    def query(self, text: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}/graphql",
            data=json.dumps({"query": text, "variables": dict(variables or {})}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise LaunchError(
                f"{self.url}/graphql answered HTTP {exc.code}: is {self.url} the Dagster UI (`dagster dev`)?"
            ) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise LaunchError(
                f"nothing answers at {self.url} ({reason}): start the Dagster UI from the project root "
                f"(`make ui`, i.e. `dagster dev`) and pass its address to --launch, or leave --launch out "
                f"to run in this process"
            ) from None
        except json.JSONDecodeError:
            raise LaunchError(f"{self.url}/graphql did not answer JSON: is it the Dagster UI?") from None
        if payload.get("errors"):
            raise LaunchError(f"the Dagster GraphQL API at {self.url} refused: {payload['errors'][0]}")
        return dict(payload["data"])

    def repository_with(self, job_names: Sequence[str], wait_s: float = 180.0) -> RepositoryAddress:
        """The code location serving the jobs; waits while locations are still loading."""
        deadline = time.monotonic() + wait_s
        while True:
            workspace = self.query(_WORKSPACE_QUERY)["workspaceOrError"]
            if workspace["__typename"] != "Workspace":
                raise LaunchError(f"{self.url} cannot list its code locations: {workspace.get('message')}")
            loading, errors = False, []
            for entry in workspace["locationEntries"]:
                loaded = entry.get("locationOrLoadError") or {}
                if loaded.get("__typename") == "PythonError":
                    errors.append(f"{entry['name']}: {loaded['message'].strip()}")
                for repository in loaded.get("repositories", []):
                    jobs = {job["name"] for job in repository["jobs"]}
                    if set(job_names) <= jobs:
                        return RepositoryAddress(loaded["name"], repository["name"])
                loading = loading or entry["loadStatus"] == "LOADING"
            if not loading or time.monotonic() > deadline:
                detail = f"; load errors: {' | '.join(errors)}" if errors else ""
                raise LaunchError(
                    f"no code location at {self.url} has the jobs {', '.join(job_names)}: is the UI serving "
                    f"this project (start `dagster dev` from the project root){detail}"
                )
            time.sleep(1.0)

    def add_partitions(self, repository: RepositoryAddress, name: str, keys: Sequence[str]) -> list[str]:
        """Adds the keys that are not partitions yet; returns them."""
        added = []
        for key in keys:
            answer = self.query(
                _ADD_PARTITION_MUTATION, {"repo": repository.selector(), "name": name, "key": key}
            )["addDynamicPartition"]
            if answer["__typename"] == "AddDynamicPartitionSuccess":
                added.append(key)
            elif answer["__typename"] != "DuplicateDynamicPartitionError":
                raise LaunchError(
                    f"{self.url} did not add the {name} partition {key}: {answer.get('message')}"
                )
        return added

    def launch(
        self,
        repository: RepositoryAddress,
        job_name: str,
        run_config: Mapping[str, Any],
        tags: Mapping[str, str],
    ) -> str:
        params = {
            "selector": {**repository.selector(), "jobName": job_name},
            "runConfigData": dict(run_config),
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        answer = self.query(_LAUNCH_MUTATION, {"params": params})["launchRun"]
        if answer["__typename"] == "LaunchRunSuccess":
            return str(answer["run"]["runId"])
        if answer["__typename"] == "RunConfigValidationInvalid":
            detail = "; ".join(e["message"] for e in answer["errors"])
        else:
            detail = answer.get("message") or answer["__typename"]
        raise LaunchError(f"{self.url} refused to launch {job_name}: {detail}")

    def statuses(self, run_ids: Sequence[str]) -> dict[str, dg.DagsterRunStatus]:
        answer = self.query(_STATUS_QUERY, {"ids": list(run_ids)})["runsOrError"]
        if answer["__typename"] != "Runs":
            raise LaunchError(f"{self.url} cannot report run statuses: {answer.get('message')}")
        return {r["runId"]: dg.DagsterRunStatus(r["status"]) for r in answer["results"]}

    def failure_message(self, run_id: str) -> str:
        """The first failed step's error, else the run's failure message."""
        cursor, run_failure = None, ""
        while True:
            answer = self.query(_FAILURE_QUERY, {"runId": run_id, "cursor": cursor})["logsForRun"]
            if answer["__typename"] != "EventConnection":
                return str(answer.get("message") or "the run failed (see its log in the Dagster UI)")
            for event in answer["events"]:
                if event["__typename"] == "ExecutionStepFailureEvent" and event.get("error"):
                    return f"{event['stepKey']}: {failure_text(event['error']['message'])}"
                if event["__typename"] == "RunFailureEvent":
                    run_failure = run_failure or str(event["message"])
            if not answer["hasMore"]:
                return run_failure or "the run failed (see its log in the Dagster UI)"
            cursor = answer["cursor"]


@dataclass(frozen=True)
class LaunchOutcome:
    run_ids: tuple[str, ...]
    failures: tuple[str, ...]
    leaderboard_run_id: str | None


def launch_main_job(
    url: str,
    configs: PipelineConfigs,
    plan: Sequence[PlannedRun],
    evaluation_id: str,
    mode: EvaluationMode = "full",
    sample_size: int | None = None,
    show_progress: bool = True,
    poll_s: float = 1.0,
) -> LaunchOutcome:
    """Submit the plan to the webserver at ``url`` stage by stage (its daemon executes the runs),
    waiting for every run of a stage before the next stage starts, as the stages depend on each other."""
    from tqdm import tqdm

    api = DagsterWebserver(url)
    repository = api.repository_with(sorted({r.job_name for r in plan}))
    for dimension, names in (
        (CHUNK_CONFIG, [c.name for c in configs.chunk_configs]),
        (PROFILE, [p.name for p in configs.profiles]),
    ):
        added = api.add_partitions(repository, dimension, names)
        if added:
            print(f"added {dimension} partitions: {', '.join(added)}", file=sys.stderr)

    run_ids: list[str] = []
    failures: list[str] = []
    leaderboard_run_id = None
    bar = tqdm(total=len(plan), desc="evaluation runs", unit="run", disable=not show_progress)
    done = 0
    for stage in STAGES:
        runs = [r for r in plan if r.stage == stage]
        submitted: dict[str, PlannedRun] = {}
        for planned in runs:
            tags = {**evaluation_tags(evaluation_id, mode), **planned.partition_tags()}
            run_id = api.launch(
                repository, planned.job_name, run_config_for(planned, mode, sample_size), tags
            )
            submitted[run_id] = planned
            run_ids.append(run_id)
        pending = dict(submitted)
        while pending:
            time.sleep(poll_s)
            for run_id, status in api.statuses(list(pending)).items():
                if status not in SUCCEEDED | FAILED:
                    continue
                planned = pending.pop(run_id)
                done += 1
                if status in FAILED:
                    message = (
                        api.failure_message(run_id) if status == dg.DagsterRunStatus.FAILURE else "canceled"
                    )
                    failures.append(f"{planned.label} (run {run_id}): {message}")
                elif planned.stage == "leaderboard":
                    leaderboard_run_id = run_id
                bar.update(1)
                bar.set_postfix_str(f"{stage}, {len(failures)} failed")
                if not show_progress:
                    print(
                        f"[{done}/{len(plan)}] {planned.label}: {status.value} (run {run_id})",
                        file=sys.stderr,
                    )
        if stage == "ingestion" and failures:
            failures.append(f"ingestion failed: the other {len(plan) - len(runs)} runs were not submitted")
            break
    bar.close()
    return LaunchOutcome(tuple(run_ids), tuple(failures), leaderboard_run_id)


def execute_evaluation(
    root: Path,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    mode: EvaluationMode = "full",
    sample_size: int | None = None,
    launch_url: str | None = None,
) -> int:
    """`rag-eval run`: a new evaluation id, printed first and last; the leaderboard; exit 1 when a run
    failed, 2 on bad input or when the webserver of --launch cannot take the runs."""
    from .assets.common import PROGRESS_BAR_ENV
    from .resources import ProjectResource

    if sample_size is not None and (mode != "quick" or sample_size < 1):
        print("error: --sample-size takes a number >= 1 and applies to --mode quick only", file=sys.stderr)
        return 2
    show = sys.stderr.isatty()
    evaluation_id = new_evaluation_id()
    try:
        project = ProjectResource(root=str(root))
        configs = project.load_configs()
        plan = plan_main_job(configs, chunk_configs, profiles)
        if mode == "quick":
            project.load_monitoring_settings()  # a broken file stops here, not in every partition
        where = f"submitted to {DagsterWebserver(launch_url).url}" if launch_url else "in process"
        print(f"evaluation {evaluation_id} ({mode} mode): {_plan_summary(plan)}, {where}", flush=True)
        if launch_url:
            outcome = launch_main_job(
                launch_url, configs, plan, evaluation_id, mode, sample_size, show_progress=show
            )
            failures, n_runs = list(outcome.failures), len(outcome.run_ids)
            board = read_current_leaderboard(None)
            if board is not None and outcome.leaderboard_run_id not in set(board["run_id"].astype(str)):
                board = None  # the webserver's warehouse is not this project's
        else:
            if show:
                os.environ[PROGRESS_BAR_ENV] = "1"
            with project_instance(root) as instance:
                board, failures = run_main_job(
                    instance,
                    chunk_configs=chunk_configs,
                    profiles=profiles,
                    show_progress=show,
                    mode=mode,
                    evaluation_id=evaluation_id,
                    sample_size=sample_size,
                )
            n_runs = len(plan)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LaunchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if launch_url:
            print(
                f"\ninterrupted: the submitted runs go on in Dagster; `rag-eval status {evaluation_id}` "
                f"follows them",
                file=sys.stderr,
            )
        return 130
    if board is not None:
        print(format_leaderboard(board))
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print(
        f"evaluation {evaluation_id}: {n_runs} runs, {len(failures)} failed; "
        f"details: rag-eval status {evaluation_id}"
    )
    return 1 if failures else 0


def _plan_summary(plan: Sequence[PlannedRun]) -> str:
    counts = Counter(r.stage for r in plan)
    return " + ".join(f"{counts[s]} {s}" for s in STAGES if counts[s]) + " runs"


# ---------------------------------------------------------------------------------------------------
# status and list: read the instance (and the metrics history)

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
        )

    def describe(self) -> str:
        """The job (asset-selection runs of sensors show as "assets"), partition and who asked for it."""
        job = "assets" if self.job_name.startswith("__") else self.job_name
        return " ".join(
            part for part in (job, self.partition, f"(by {self.origin})" if self.origin else "") if part
        )

    @property
    def outcome(self) -> str:
        if self.status in SUCCEEDED:
            return "succeeded"
        return "failed" if self.status in FAILED else _ACTIVE_LABEL


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
    raise UnknownReference(f"{ref!r} matches {len(matches)} runs or evaluations ({shown}): give more of it")


def metrics_of_runs(warehouse_dir: str | Path, runs: Sequence[RunInfo]) -> pd.DataFrame:
    """The retrieval_metrics_summary history rows the evaluation runs wrote (one per run and partition).
    Rows from before evaluation ids and modes were recorded count as their run's own evaluation, full."""
    frames = []
    for run in runs:
        if run.job_name != STAGE_JOBS["evaluation"] or "|" not in run.partition:
            continue
        chunk_config, profile = run.partition.split("|", 1)
        path = history_path(
            warehouse_dir,
            "retrieval_metrics_summary",
            {CHUNK_CONFIG: chunk_config, PROFILE: profile},
            run.run_id,
        )
        if path.exists():
            frames.append(pd.read_parquet(path))
    if not frames:
        return pd.DataFrame()
    rows = pd.concat(frames, ignore_index=True)
    if "evaluation_id" not in rows.columns:
        rows["evaluation_id"] = rows["run_id"]
    rows["evaluation_id"] = rows["evaluation_id"].fillna(rows["run_id"])
    if "evaluation_mode" not in rows.columns:
        rows["evaluation_mode"] = "full"
    rows["evaluation_mode"] = rows["evaluation_mode"].fillna("full")
    return rows


def format_status(selection: Selection, metrics: pd.DataFrame) -> str:
    runs = selection.runs
    counts = Counter(r.outcome for r in runs)
    summary = ", ".join(f"{counts[k]} {k}" for k in ("succeeded", "failed", _ACTIVE_LABEL) if counts[k])
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
    header = ["run", "job", "partition", "status", "started", "ended", "duration"]
    rows = [
        [
            r.run_id[:8],
            r.job_name,
            r.partition or "-",
            r.status.value,
            _when(r.started),
            _when(r.ended),
            _duration(r.started, r.ended),
        ]
        for r in runs
    ]
    lines += ["", format_table(header, rows)]
    failed = [r for r in runs if r.status in FAILED]
    if failed:
        lines.append("")
    for r in failed:
        where = " ".join(part for part in (r.run_id[:8], r.job_name, r.partition) if part)
        lines.append(f"FAILED {where}: {r.failure}")
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
            *[_mean_ci(row, m) for m in present],
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


def run_failure(instance: dg.DagsterInstance, run_id: str) -> str:
    """The first failed step's error message, else the run failure's message."""
    events = instance.all_logs(
        run_id, of_type={dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE}
    )
    for entry in events:
        event = entry.dagster_event
        if event is not None and event.is_step_failure and event.step_failure_data.error:
            return f"{event.step_key}: {failure_text(event.step_failure_data.error.message)}"
    for entry in events:
        if entry.dagster_event is not None and entry.dagster_event.message:
            return entry.dagster_event.message
    return "canceled or failed without a message (see its log in the Dagster UI)"


def with_failures(instance: dg.DagsterInstance, selection: Selection) -> Selection:
    runs = tuple(
        replace(r, failure=run_failure(instance, r.run_id)) if r.status in FAILED else r
        for r in selection.runs
    )
    return Selection(selection.kind, selection.ref, runs)


def evaluation_status(instance: dg.DagsterInstance, ref: str, warehouse_dir: str | Path | None = None) -> str:
    """`rag-eval status REF`: every run with its status and times, failures with their message, and the
    headline retrieval metrics of the partitions evaluated."""
    selection = with_failures(instance, find_runs(instance, ref))
    metrics = metrics_of_runs(warehouse_dir or default_warehouse_dir(), selection.runs)
    return format_status(selection, metrics)


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


def format_evaluations(summaries: Sequence[EvaluationSummary]) -> str:
    header = ["evaluation", "started", "mode", "runs", "succeeded", "failed", _ACTIVE_LABEL, "partitions"]
    rows = [
        [
            s.evaluation_id,
            _when(s.started),
            s.mode,
            str(len(s.runs)),
            str(s.counts["succeeded"]),
            str(s.counts["failed"]),
            str(s.counts[_ACTIVE_LABEL]),
            s.partitions,
        ]
        for s in summaries
    ]
    return format_table(header, rows)


# ---------------------------------------------------------------------------------------------------
# regenerate-questions

GENERATORS: tuple[str, ...] = get_args(TokenLevelGenerator)


@dataclass(frozen=True)
class RegeneratedQuestions:
    run_id: str
    failure: str | None
    generator: str = ""
    accepted: int = 0
    rejected: int = 0
    rejected_by_reason: Mapping[str, int] = field(default_factory=dict)
    evaluation_questions: int | None = None
    evaluate_on: str = ""

    def describe(self) -> str:
        if self.failure is not None:
            return f"regenerating the questions failed (run {self.run_id}): {self.failure}"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.rejected_by_reason.items()))
        lines = [
            f"synthetic_questions ({self.generator}): {self.accepted} accepted, {self.rejected} rejected"
            + (f" ({reasons})" if reasons else ""),
            f"eval_questions: {self.evaluation_questions} questions from the {self.evaluate_on} set",
        ]
        if self.evaluate_on == "golden":
            lines.append(
                "note: evaluate_on is golden in data/generation.yaml, so the evaluation does not use the "
                "synthetic questions; set it to synthetic or both to use them"
            )
        lines.append(f"run {self.run_id}")
        return "\n".join(lines)


def regenerate_questions(
    instance: dg.DagsterInstance,
    resources: Mapping[str, object] | None = None,
    generator: str | None = None,
) -> RegeneratedQuestions:
    """Re-materialize the ingestion job (synthetic_questions, eval_questions, answer_calibration) in
    process; ``generator`` overrides token_level.generator of data/generation.yaml for this run only."""
    from .definitions import build_definitions
    from .resources import ProjectResource

    base = dict(build_definitions(resources).resources or {})
    project = base["project"]
    assert isinstance(project, ProjectResource)
    with tempfile.TemporaryDirectory(prefix="rag-eval-generation-") as scratch:
        if generator is not None:
            base["project"] = _with_generator(project, generator, Path(scratch))
        job = build_definitions(base).resolve_job_def(STAGE_JOBS["ingestion"])
        result = job.execute_in_process(
            instance=instance,
            run_config=QUIET_LOGS,
            tags={"rag_eval/command": "regenerate-questions"},
            raise_on_error=False,
        )
    if not result.success:
        return RegeneratedQuestions(result.run_id, _failure_message(result))
    synthetic = _metadata(result, "synthetic_questions")
    evaluated = _metadata(result, "eval_questions")
    return RegeneratedQuestions(
        run_id=result.run_id,
        failure=None,
        generator=str(synthetic["generator"]),
        accepted=int(synthetic["n_questions"]),
        rejected=int(synthetic["n_rejected"]),
        rejected_by_reason={str(k): int(v) for k, v in dict(synthetic["rejected_by_reason"]).items()},
        evaluation_questions=int(evaluated["n_questions"]),
        evaluate_on=str(evaluated["evaluate_on"]),
    )


def _with_generator(project: ProjectResource, generator: str, scratch: Path) -> ProjectResource:
    """The project with a copy of its generation settings whose token-level generator is replaced."""
    if generator not in GENERATORS:
        raise ConfigError(f"--generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
    source = project.path(project.generation_file)
    load_generation_settings(source)  # a broken file fails here, under its own name
    document = (yaml.safe_load(source.read_text(encoding="utf-8")) if source.exists() else None) or {}
    token_level = dict(document.get("token_level") or {})
    token_level["generator"] = generator
    document["token_level"] = token_level
    copy = scratch / "generation.yaml"
    copy.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return type(project)(**{**project.model_dump(), "generation_file": str(copy)})


def _metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    materializations = result.asset_materializations_for_node(asset)
    if not materializations:
        return {}
    return {k: getattr(v, "value", v) for k, v in materializations[-1].metadata.items()}


# ---------------------------------------------------------------------------------------------------
# the commands


def add_runs_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run", help="evaluate every partition (one Dagster run each), print the leaderboard"
    )
    add_selection_arguments(run)
    run.add_argument(
        "--launch",
        nargs="?",
        const=DEFAULT_LAUNCH_URL,
        metavar="URL",
        help=f"submit the runs to a running `dagster dev` (default {DEFAULT_LAUNCH_URL}) instead of "
        f"executing them in this process",
    )
    status = commands.add_parser("status", help="the runs of an evaluation (or one run) and its metrics")
    status.add_argument("ref", help="an evaluation id or a run id, or a unique prefix of either")
    listed = commands.add_parser("list", help="the recent evaluations")
    listed.add_argument("--limit", type=int, default=10, help="how many (default 10)")
    regenerate = commands.add_parser(
        "regenerate-questions", help="re-materialize synthetic_questions and eval_questions in process"
    )
    regenerate.add_argument(
        "--generator", choices=GENERATORS, help="override token_level.generator of data/generation.yaml"
    )


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-configs", help="comma-separated chunk config names (default: all)")
    parser.add_argument("--profiles", help="comma-separated retrieval profile names (default: all)")
    parser.add_argument(
        "--mode", choices=EVALUATION_MODES, default="full", help="quick: a seeded sample of the questions"
    )
    parser.add_argument(
        "--sample-size",
        type=int,
        help="quick mode: questions (default: quick.sample_size of data/monitoring.yaml)",
    )


def names(value: str | None) -> list[str] | None:
    return [n.strip() for n in value.split(",") if n.strip()] if value else None


def run_runs_command(args: argparse.Namespace, root: Path) -> int:
    if args.command == "run":
        return execute_evaluation(
            root,
            chunk_configs=names(args.chunk_configs),
            profiles=names(args.profiles),
            mode=args.mode,
            sample_size=args.sample_size,
            launch_url=args.launch,
        )
    if args.command == "list" and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        with project_instance(root) as instance:
            if args.command == "status":
                print(evaluation_status(instance, args.ref))
                return 0
            if args.command == "list":
                summaries = recent_evaluations(instance, args.limit)
                print(format_evaluations(summaries) if summaries else "no runs yet: `rag-eval run` makes one")
                return 0
            return _regenerate(instance, args.generator)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _regenerate(instance: dg.DagsterInstance, generator: str | None) -> int:
    from .assets.common import PROGRESS_BAR_ENV

    if sys.stderr.isatty():
        os.environ[PROGRESS_BAR_ENV] = "1"
    print("regenerating synthetic_questions, eval_questions and answer_calibration ...", file=sys.stderr)
    outcome = regenerate_questions(instance, generator=generator)
    print(outcome.describe(), file=sys.stderr if outcome.failure else sys.stdout)
    return 1 if outcome.failure else 0
