"""The README's GraphQL queries (section "The tech spec's REST endpoints, on Dagster") work as written
against a real `dagster dev`: launch a quick evaluation run, follow it, read its metrics and its
regression check. The queries are read from README.md, so a wrong field or argument there fails here."""

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.warehouse import Warehouse
from rag_eval_pipeline_tests.dagster_dev import REPO, graphql, running_dagster_dev

pytestmark = pytest.mark.slow

SECTION = "### The tech spec's REST endpoints, on Dagster"
# README's example partition -> the tiny project's (longest first: the multi key contains the others).
TINY_PARTITION = {
    "fixed-200-0|dense-top5": "fixed-60-0|top2",
    "fixed-200-0": "fixed-60-0",
    "dense-top5": "top2",
}
PARTITION = "fixed-60-0|top2"
PARTITION_DIMENSIONS = {"chunk_config": "fixed-60-0", "profile": "top2"}
RUN_DEADLINE_S = 600


def readme_queries() -> dict[int, str]:
    """The ```graphql blocks of the section, by the number their first comment line gives them, with
    the README's partition replaced by the tiny project's."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert SECTION in text, f"README.md lost the section {SECTION!r}"
    section = text.split(SECTION, 1)[1]
    section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.MULTILINE)[0]  # next heading
    queries: dict[int, str] = {}
    for block in re.findall(r"^```graphql\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL):
        number = re.match(r"#\s*(\d+)\.", block.strip())
        assert number, f"a graphql block of README.md does not start with '# <n>.': {block[:80]!r}"
        for readme_key, tiny_key in TINY_PARTITION.items():
            block = block.replace(readme_key, tiny_key)
        queries[int(number.group(1))] = block
    assert sorted(queries) == [1, 2, 3, 4], f"expected graphql blocks 1-4 in README.md, got {sorted(queries)}"
    return queries


def ask(url: str, query: str) -> dict:
    """The query's data; GraphQL errors (HTTP 400 or an ``errors`` list) fail the test with the server's
    message, which names the wrong field or argument."""
    try:
        response = graphql(url, query)
    except urllib.error.HTTPError as error:
        pytest.fail(f"HTTP {error.code} for\n{query}\n{error.read().decode(errors='replace')}")
    assert not response.get("errors"), f"{query}\n{json.dumps(response['errors'], indent=1)}"
    return response["data"]


@pytest.fixture
def evaluated_tiny_project(tiny_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny project with its partitions added and fixed-60-0 x top2 evaluated once (full mode), on
    the instance `dagster dev` started in the project folder uses: its dagster.yaml, storage under
    .dagster/ (relative to the working directory, as for `dagster dev`)."""
    from rag_eval_pipeline.runner.in_process import run_main_job
    from rag_eval_pipeline.runner.instance import project_instance

    for name in ("DAGSTER_HOME", "RAG_EVAL_WAREHOUSE_DIR", "RAG_EVAL_GOLDEN_DATASET", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tiny_project))
    monkeypatch.chdir(tiny_project)
    with project_instance(tiny_project) as instance:
        _, failures = run_main_job(
            instance, chunk_configs=["fixed-60-0"], profiles=["top2"], show_progress=False
        )
    assert failures == []
    assert (tiny_project / ".dagster" / "storage").is_dir()
    assert (
        Warehouse.in_project(tiny_project).current_path("retrieval_metrics", PARTITION_DIMENSIONS).is_file()
    )
    return tiny_project


@pytest.fixture
def dagster_dev(evaluated_tiny_project: Path) -> Iterator[str]:
    """`dagster dev` on the tiny project, started as `make ui` starts it (the code location is named
    "rag_eval_pipeline", as the README's queries say); yields its URL once the location has loaded."""
    with (
        (evaluated_tiny_project / "dagster_dev.log").open("wb") as log,  # read it when the test fails
        running_dagster_dev(evaluated_tiny_project, stderr=log) as url,
    ):
        yield url


def test_the_readme_graphql_queries_work_on_dagster_dev(dagster_dev: str, evaluated_tiny_project: Path):
    url = dagster_dev
    queries = readme_queries()
    assert PARTITION in queries[1], "query 1 no longer launches the README's example partition"
    evaluation_id = re.search(r'key: "rag_eval/evaluation_id", value: "([^"]+)"', queries[1])
    assert evaluation_id, "query 1 no longer tags its run with rag_eval/evaluation_id"
    assert evaluation_id.group(0) in queries[2], "query 2 does not ask for the evaluation query 1 launched"

    # 1. launch: the run is queued for the daemon of `dagster dev`
    launched = ask(url, queries[1])["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    # 2. follow it by its evaluation id until it finished
    deadline = time.monotonic() + RUN_DEADLINE_S
    while True:
        runs = ask(url, queries[2])["runsOrError"]["results"]
        assert [r["runId"] for r in runs] == [run_id], runs
        (run,) = runs
        if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']} after {RUN_DEADLINE_S} s"
        time.sleep(2)
    assert run["status"] == "SUCCESS", run
    assert run["jobName"] == "evaluation_job"
    assert run["endTime"] >= run["startTime"] > 0
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert tags["rag_eval/evaluation_id"] == evaluation_id.group(1)
    assert tags["dagster/partition"] == PARTITION
    assert tags["dagster/partition/chunk_config"] == "fixed-60-0"
    assert tags["dagster/partition/profile"] == "top2"
    # the run config of query 1 chose quick mode, and its tag the evaluation: both are in the run's rows
    rows = pd.read_parquet(
        Warehouse.in_project(evaluated_tiny_project).history_path(
            "retrieval_metrics", PARTITION_DIMENSIONS, run_id
        )
    )
    assert set(rows["evaluation_mode"]) == {"quick"}
    assert set(rows["evaluation_id"]) == {evaluation_id.group(1)}

    # 3. the metric means of the launched run's materialization (and the earlier full run's)
    materializations = ask(url, queries[3])["assetOrError"]["assetMaterializations"]
    by_run = {m["runId"]: m for m in materializations}
    assert len(by_run) == 2 and {m["partition"] for m in materializations} == {PARTITION}
    ours = by_run[run_id]
    assert ours["timestamp"]
    floats = {e["label"]: e["floatValue"] for e in ours["metadataEntries"] if "floatValue" in e}
    for metric in ("span_recall", "span_iou", "recall_at_k", "mrr"):
        assert 0.0 <= floats[metric] <= 1.0, (metric, floats)
    assert floats["span_recall"] > 0.0  # the tiny corpus's answers are found

    # 4. the regression check of the launched run: compared with the full run before it, and passed
    executions = ask(url, queries[4])["assetCheckExecutions"]
    checked = [e for e in executions if e["runId"] == run_id]
    assert len(checked) == 1, executions
    (execution,) = checked
    assert execution["status"] == "SUCCEEDED"
    assert execution["evaluation"]["partition"] == PARTITION
    assert execution["evaluation"]["severity"] in ("ERROR", "WARN")
    assert any(e["label"] for e in execution["evaluation"]["metadataEntries"])
