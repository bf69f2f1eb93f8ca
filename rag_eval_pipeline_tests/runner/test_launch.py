"""A chunk config added while the UI runs, evaluated without the backfill daemon (docs/running.md, "A new
chunk config from the UI"): `rag-eval run --launch URL --chunk-configs NAME` against a real `dagster dev`
adds the config's partitions and submits its runs one by one (`launchRun`), which the run queue starts
within a second, where a backfill of the same partitions waits for the backfill daemon's next look (every
30 s, fixed in Dagster). Both paths are timed from the launch to their first run's start and printed
(`pytest -s`); no wall-clock figure is asserted."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.runs.run_tags import BACKFILL_TAG, PARTITION_TAG
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.lib.partitions import CHUNK_CONFIG, PROFILE
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline.runner.launch import DagsterWebserver
from rag_eval_pipeline_tests.conftest import CliRunFactory
from rag_eval_pipeline_tests.dagster_dev import running_dagster_dev
from rag_eval_pipeline_tests.faults.entry_points import rag_eval, rag_eval_env

LAUNCHED, BACKFILLED = "fixed-80-0", "fixed-90-0"  # both new: no partition, nothing computed
PROFILES = ("top2", "top4")  # the tiny project's
TERMINAL = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}

_BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on Error { message }
  }
}
"""


def add_chunk_configs(project: Path, *names: str) -> None:
    path = project / "data" / "chunk_configs.yaml"
    entries = "".join(
        f"  - name: {name}\n    chunker: fixed\n    chunk_size: {name.split('-')[1]}\n" for name in names
    )
    path.write_text(path.read_text(encoding="utf-8") + entries, encoding="utf-8")


def runs_since(since: float, tags: dict[str, str] | None = None) -> list[dg.RunRecord]:
    """The runs created on the project's instance (the working directory's) since ``since`` (Unix time)."""
    with project_instance(Path.cwd()) as instance:
        created_after = dt.datetime.fromtimestamp(since, dt.UTC)
        return list(instance.get_run_records(dg.RunsFilter(created_after=created_after, tags=tags or {})))


def first_run(since: float, records: list[dg.RunRecord]) -> str:
    """When the first of ``records`` was submitted and when it started, in seconds after ``since``."""
    first = min(records, key=lambda r: r.create_timestamp)
    submitted = first.create_timestamp.timestamp() - since
    started = (first.start_time or float("nan")) - since
    return f"first run ({first.dagster_run.job_name}) submitted after {submitted:5.1f} s, started after {started:5.1f} s"


@pytest.mark.slow
def test_a_new_chunk_config_launched_from_the_ui_runs_without_the_backfill_daemon(
    cli_run: CliRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = cli_run().project  # evaluated once: only the new configs' partitions are stale
    monkeypatch.chdir(project)  # the instance's storage paths are relative to the project
    env = rag_eval_env(project)
    # sensors stopped ("by hand in the UI") before the daemon starts: they would evaluate the new configs
    with running_dagster_dev(project, env=env, sensors=False) as url:
        add_chunk_configs(project, LAUNCHED, BACKFILLED)

        # the path of docs/running.md: the CLI submits every run of the config to the UI's instance
        launched_at = time.time()
        launch = rag_eval(project, "run", "--launch", url, "--chunk-configs", LAUNCHED)
        assert launch.returncode == 0, launch.stdout + launch.stderr
        launched = runs_since(launched_at)

        # the UI's backfill of the same first stage (Jobs → chunking_job → Materialize → the partition)
        api = DagsterWebserver(url)
        repository = api.repository_with(["chunking_job"])
        api.add_partitions(repository, CHUNK_CONFIG, [BACKFILLED])  # the UI's "Add partition"
        params = {
            "selector": {
                "partitionSetName": "chunking_job_partition_set",
                "repositorySelector": repository.selector(),
            },
            "partitionNames": [BACKFILLED],
        }
        backfilled_at = time.time()
        answer = api.query(_BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert answer["__typename"] == "LaunchBackfillSuccess", answer
        deadline = time.monotonic() + 300
        while not (backfilled := runs_since(backfilled_at, {BACKFILL_TAG: answer["backfillId"]})) or any(
            r.dagster_run.status not in TERMINAL for r in backfilled
        ):
            assert time.monotonic() < deadline, "the backfill's run did not end within 300 s"
            time.sleep(0.5)

    ran = sorted((r.dagster_run.job_name, r.dagster_run.tags.get(PARTITION_TAG, "")) for r in launched)
    assert ran == [
        ("chunking_job", LAUNCHED),
        *(("evaluation_job", f"{LAUNCHED}|{p}") for p in PROFILES),
        ("leaderboard_job", ""),
    ]  # the ingestion is up to date: not run
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in launched)
    assert not any(BACKFILL_TAG in r.dagster_run.tags for r in launched)  # runs, no backfill
    assert f"submitted to {url}" in launch.stdout.splitlines()[0]
    assert "added chunk_config partitions: " + LAUNCHED in launch.stderr
    warehouse = Warehouse.in_project(project, env)
    for profile in PROFILES:
        assert warehouse.current_path(
            "retrieval_metrics", {CHUNK_CONFIG: LAUNCHED, PROFILE: profile}
        ).is_file()
    board = pd.read_parquet(warehouse.current_path("leaderboard"))
    assert {(LAUNCHED, p) for p in PROFILES} <= set(zip(board["chunk_config"], board["profile"], strict=True))

    assert [(r.dagster_run.job_name, r.dagster_run.status) for r in backfilled] == [
        ("chunking_job", dg.DagsterRunStatus.SUCCESS)
    ]
    print(
        f"\n`rag-eval run --launch`: {first_run(launched_at, launched)} (includes the CLI's start and plan)"
    )
    print(f"backfill from the UI:   {first_run(backfilled_at, backfilled)} (the backfill daemon's next look)")
