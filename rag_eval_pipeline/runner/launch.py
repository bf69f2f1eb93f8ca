"""`rag-eval run --launch`: the main job's plan submitted to a Dagster webserver through its GraphQL API
(plain HTTP POSTs), stage by stage, so the daemon executes the runs on the instance."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from ..core.settings.configs import PipelineConfigs
from ..lib.partitions import CHUNK_CONFIG, PROFILE
from ..lib.run_record import cli_trigger_tags, profile_snapshot
from .outcome import CANCELLED_BEFORE_START, FAILED, SUCCEEDED, EvaluationOutcome, RunOutcome, blocked_reason
from .plan import STAGES, EvaluationRequest, PlannedRun, run_config_for
from .run_failures import GRAPHQL_STEP_FAILURE_FIELDS, UNKNOWN_CAUSE, RunFailure, failure_of_graphql_event
from .up_to_date import UpToDate

# a stage whose runs all stay queued this long gets a hint: runs launched without a daemon never start
QUEUED_HINT_S = 120.0


class LaunchError(Exception):
    """The webserver `--launch` points at cannot take the runs (not there, not Dagster, no such job)."""


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
_FAILURE_QUERY = (
    """
query RagEvalFailure($runId: ID!, $cursor: String) {
  logsForRun(runId: $runId, afterCursor: $cursor) {
    __typename
    ... on EventConnection {
      cursor
      hasMore
      events {
        __typename
        """
    + GRAPHQL_STEP_FAILURE_FIELDS
    + """
        ... on RunFailureEvent { message }
      }
    }
    ... on Error { message }
  }
}
"""
)


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

    def failure(self, run_id: str) -> RunFailure:
        """The first failed step's cause, else the run's failure message."""
        cursor, run_failure = None, ""
        while True:
            answer = self.query(_FAILURE_QUERY, {"runId": run_id, "cursor": cursor})["logsForRun"]
            if answer["__typename"] != "EventConnection":
                return RunFailure(str(answer.get("message") or UNKNOWN_CAUSE))
            for event in answer["events"]:
                if event["__typename"] == "ExecutionStepFailureEvent" and event.get("error"):
                    return failure_of_graphql_event(event)
                if event["__typename"] == "RunFailureEvent":
                    run_failure = run_failure or str(event["message"])
            if not answer["hasMore"]:
                return RunFailure(run_failure or UNKNOWN_CAUSE)
            cursor = answer["cursor"]


def launch_main_job(
    url: str,
    configs: PipelineConfigs,
    plan: Sequence[PlannedRun],
    request: EvaluationRequest,
    show_progress: bool = True,
    poll_s: float = 1.0,
    evaluated_before: bool = False,
    up_to_date: UpToDate | None = None,
    instance: dg.DagsterInstance | None = None,
) -> EvaluationOutcome:
    """Submit the plan to the webserver at ``url`` stage by stage (its daemon executes the runs),
    waiting for every run of a stage before the next stage starts, as the stages depend on each other;
    a run that needs what failed is not submitted (`blocked_reason`), nor one that is ``up_to_date``
    (a run with some assets up to date runs whole). Each run carries the run record's tags (`rag-eval`,
    who, the profiles at start); with the ``instance``, a `rag-eval cancel` of the evaluation stops it
    between stages (the stage's runs themselves are terminated by the cancel)."""
    from tqdm import tqdm

    from .cancel import evaluation_cancelled_since

    started_at = datetime.now(UTC)
    record = {**cli_trigger_tags(), **profile_snapshot(request.profiles_of(configs))}

    api = DagsterWebserver(url)
    repository = api.repository_with(sorted({r.job_name for r in plan}))
    for dimension, names in (
        (CHUNK_CONFIG, [c.name for c in configs.chunk_configs]),
        (PROFILE, [p.name for p in configs.profiles]),
    ):
        added = api.add_partitions(repository, dimension, names)
        if added:
            print(f"added {dimension} partitions: {', '.join(added)}", file=sys.stderr)

    outcomes: dict[PlannedRun, RunOutcome] = {}
    bar = tqdm(total=len(plan), desc="evaluation runs", unit="run", disable=not show_progress)
    done = 0
    for stage in STAGES:
        if up_to_date is not None:
            up_to_date.ran()  # the stage before may have materialized
        earlier = list(outcomes.values())
        submitted: dict[str, PlannedRun] = {}
        cancelled = instance is not None and evaluation_cancelled_since(
            instance, request.evaluation_id, started_at
        )
        for planned in (r for r in plan if r.stage == stage):
            if cancelled:
                outcomes[planned] = RunOutcome(planned, "cancelled", blocked_by=CANCELLED_BEFORE_START)
                done += 1
                bar.update(1)
                continue
            blocked = blocked_reason(planned, earlier, evaluated_before)
            if blocked:
                outcomes[planned] = RunOutcome(planned, "not run", blocked_by=blocked)
                done += 1
                bar.update(1)
                if not show_progress:
                    print(f"[{done}/{len(plan)}] {planned.label}: not run ({blocked})", file=sys.stderr)
                continue
            if up_to_date is not None and not up_to_date.stale(planned, request):
                outcomes[planned] = RunOutcome(planned, "up to date")
                done += 1
                bar.update(1)
                if not show_progress:
                    print(f"[{done}/{len(plan)}] {planned.label}: up to date", file=sys.stderr)
                continue
            tags = {**request.tags(), **record, **planned.partition_tags()}
            run_config = run_config_for(planned, request.mode, request.sample_size)
            submitted[api.launch(repository, planned.job_name, run_config, tags)] = planned
        pending = dict(submitted)
        submitted_at, hinted = time.monotonic(), False
        while pending:
            time.sleep(poll_s)
            statuses = api.statuses(list(pending))
            queued = all(status == dg.DagsterRunStatus.QUEUED for status in statuses.values())
            if queued and not hinted and time.monotonic() - submitted_at > QUEUED_HINT_S:
                hinted = True
                print(
                    f"the {stage} runs are still queued after {QUEUED_HINT_S:.0f} s: is the Dagster daemon "
                    "running (`dagster dev` starts one) and the run queue not paused? Waiting; Ctrl-C "
                    "leaves them queued.",
                    file=sys.stderr,
                )
            for run_id, status in statuses.items():
                if status not in SUCCEEDED | FAILED:
                    continue
                planned = pending.pop(run_id)
                done += 1
                if status == dg.DagsterRunStatus.CANCELED:
                    failure = RunFailure("cancelled (its log in the Dagster UI says by whom)")
                    outcomes[planned] = RunOutcome(planned, "cancelled", run_id, failure)
                elif status in FAILED:
                    outcomes[planned] = RunOutcome(planned, "failed", run_id, api.failure(run_id))
                else:
                    outcomes[planned] = RunOutcome(planned, "succeeded", run_id)
                failed = sum(o.state == "failed" for o in outcomes.values())
                bar.update(1)
                bar.set_postfix_str(f"{stage}, {failed} failed")
                if not show_progress:
                    print(
                        f"[{done}/{len(plan)}] {planned.label}: {status.value} (run {run_id})",
                        file=sys.stderr,
                    )
    bar.close()
    return EvaluationOutcome(request, tuple(outcomes[planned] for planned in plan))
