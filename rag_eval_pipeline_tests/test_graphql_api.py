"""The documented GraphQL queries (docs/living-evaluation.md, section "The tech spec's REST endpoints, on
Dagster") work as written against a real `dagster dev`: launch a quick evaluation run, follow it, read its metrics and its
regression check, regenerate one document's questions, cancel a queued run. The queries are read from
that page, so a wrong field or argument there fails here. `rag-eval cancel` is checked on the same
`dagster dev`: a queued run (held in the queue by a tag limit of 0) and a started one (terminated
through the instance's run launcher)."""

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, MULTI_PARTITION_TAG_PREFIX, PARTITION_TAG
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests.dagster_dev import REPO, graphql, running_dagster_dev

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "living-evaluation.md"
SECTION = "## The tech spec's REST endpoints, on Dagster"
# The page's example partition -> the tiny project's (longest first: the multi key contains the others).
TINY_PARTITION = {
    "fixed-200-0|dense-top5": "fixed-60-0|top2",
    "fixed-200-0": "fixed-60-0",
    "dense-top5": "top2",
    "operations/on_call.md": "alpha/pumps.md",
}
# Runs tagged so stay in the run queue of the test's `dagster dev` (a tag concurrency limit of 0).
HOLD_TAG = "rag_eval/test_hold"
PARTITION = "fixed-60-0|top2"
PARTITION_DIMENSIONS = {"chunk_config": "fixed-60-0", "profile": "top2"}
RUN_DEADLINE_S = 600


def documented_queries() -> dict[int, str]:
    """The ```graphql blocks of the section, by the number their first comment line gives them, with
    the page's partition replaced by the tiny project's."""
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"{PAGE.name} lost the section {SECTION!r}"
    section = text.split(SECTION, 1)[1]
    section = re.split(r"^#{2,3} ", section, maxsplit=1, flags=re.MULTILINE)[0]  # next heading
    queries: dict[int, str] = {}
    for block in re.findall(r"^```graphql\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL):
        number = re.match(r"#\s*(\d+)\.", block.strip())
        assert number, f"a graphql block of {PAGE.name} does not start with '# <n>.': {block[:80]!r}"
        for page_key, tiny_key in TINY_PARTITION.items():
            block = block.replace(page_key, tiny_key)
        queries[int(number.group(1))] = block
    assert sorted(queries) == [1, 2, 3, 4, 5, 6], (
        f"expected graphql blocks 1-6 in {PAGE.name}, got {sorted(queries)}"
    )
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
    from rag_eval_pipeline.runner.instance import project_instance
    from rag_eval_pipeline.runner.regenerate import regenerate_questions
    from rag_eval_pipeline_tests.evaluations import evaluate_board

    for name in ("DAGSTER_HOME", "RAG_EVAL_WAREHOUSE_DIR", "RAG_EVAL_GOLDEN_DATASET", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tiny_project))
    monkeypatch.chdir(tiny_project)
    (tiny_project / "data/generation.yaml").write_text(  # passages the tiny documents have (query 5)
        "token_level: {n_questions: 6, passage_min_chars: 40, retrievability_top_n: 0}\n", encoding="utf-8"
    )
    with project_instance(tiny_project) as instance:
        _, failures = evaluate_board(
            instance, chunk_configs=["fixed-60-0"], profiles=["top2"], show_progress=False
        )
        regenerated = regenerate_questions(instance)  # synthetic questions to keep (query 5)
    assert failures == [] and regenerated.failure is None and regenerated.accepted > 0
    settings = yaml.safe_load((tiny_project / "dagster.yaml").read_text(encoding="utf-8"))
    settings["concurrency"]["runs"]["tag_concurrency_limits"] = [{"key": HOLD_TAG, "limit": 0}]
    (tiny_project / "dagster.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    assert (tiny_project / ".dagster" / "storage").is_dir()
    assert (
        Warehouse.in_project(tiny_project).current_path("retrieval_metrics", PARTITION_DIMENSIONS).is_file()
    )
    return tiny_project


@pytest.fixture
def dagster_dev(evaluated_tiny_project: Path) -> Iterator[str]:
    """`dagster dev` on the tiny project, started as `make ui` starts it (the code location is named
    "rag_eval_pipeline", as the documented queries say); yields its URL once the location has loaded."""
    with (
        (evaluated_tiny_project / "dagster_dev.log").open("wb") as log,  # read it when the test fails
        running_dagster_dev(evaluated_tiny_project, stderr=log) as url,
    ):
        yield url


def test_the_documented_graphql_queries_work_on_dagster_dev(
    dagster_dev: str, evaluated_tiny_project: Path, capsys: pytest.CaptureFixture
) -> None:
    url = dagster_dev
    queries = documented_queries()
    assert PARTITION in queries[1], "query 1 no longer launches the page's example partition"
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
    assert tags[EVALUATION_ID_TAG] == evaluation_id.group(1)
    assert tags[PARTITION_TAG] == PARTITION
    assert tags[f"{MULTI_PARTITION_TAG_PREFIX}chunk_config"] == "fixed-60-0"
    assert tags[f"{MULTI_PARTITION_TAG_PREFIX}profile"] == "top2"
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

    # 5, 6 and `rag-eval cancel`
    regenerate_and_cancel(url, evaluated_tiny_project, capsys)


def wait_for_status(url: str, run_id: str, wanted: set[str], deadline_s: float = RUN_DEADLINE_S) -> str:
    deadline = time.monotonic() + deadline_s
    while True:
        query = f'{{ runOrError(runId: "{run_id}") {{ ... on Run {{ status }} }} }}'
        status = str(ask(url, query)["runOrError"]["status"])
        if status in wanted:
            return status
        assert time.monotonic() < deadline, f"run {run_id} still {status} after {deadline_s} s"
        time.sleep(1)


def launch_evaluation(url: str, evaluation_id: str, hold: bool) -> str:
    """A quick evaluation run of the example partition, as query 1 launches it (held in the queue)."""
    from rag_eval_pipeline.runner.launch import DagsterWebserver

    api = DagsterWebserver(url)
    repository = api.repository_with(["evaluation_job"])
    tags = {
        PARTITION_TAG: PARTITION,
        **{f"{MULTI_PARTITION_TAG_PREFIX}{k}": v for k, v in PARTITION_DIMENSIONS.items()},
        EVALUATION_ID_TAG: evaluation_id,
        **({HOLD_TAG: "true"} if hold else {}),
    }
    run_config = {"resources": {"evaluation": {"config": {"mode": "quick"}}}}
    return api.launch(repository, "evaluation_job", run_config, tags)


def regenerate_and_cancel(url: str, project: Path, capsys: pytest.CaptureFixture) -> None:
    """Queries 5 and 6, and `rag-eval cancel` of a queued and of a started run (one `dagster dev` for
    the whole test: starting one and evaluating the project takes most of its time)."""
    from rag_eval_pipeline.cli import main

    queries = documented_queries()
    warehouse = Warehouse.in_project(project)
    before = warehouse.read_current("synthetic_questions")
    assert before is not None

    # 5. the questions of one document regenerated by the daemon's run, every other one kept
    launched = ask(url, queries[5])["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    assert wait_for_status(url, run_id, {"SUCCESS", "FAILURE", "CANCELED"}) == "SUCCESS"
    after = warehouse.read_current("synthetic_questions")
    assert after is not None and set(after["run_id"]) == {run_id}
    about_pumps = after["source_doc_ids"].map(lambda ids: "alpha/pumps.md" in list(ids))
    kept = after[~about_pumps]
    assert len(kept) and set(kept["generated_run_id"]) == {str(before["run_id"].iloc[0])}
    assert set(after.loc[about_pumps, "generated_run_id"]) <= {run_id}

    # 6. a queued run cancelled through the GraphQL API: CANCELED at once
    held = launch_evaluation(url, "eval-readme-cancel", hold=True)
    time.sleep(3)  # the daemon dequeues every second: a held run stays queued
    assert wait_for_status(url, held, {"QUEUED"}) == "QUEUED"
    answer = ask(url, queries[6].replace("RUN_ID", held))["terminateRuns"]
    (result,) = answer["terminateRunResults"]
    assert result["__typename"] == "TerminateRunSuccess", answer
    assert wait_for_status(url, held, {"CANCELED"}, 60) == "CANCELED"

    # `rag-eval cancel` of a queued run: the run queue's own cancellation
    held = launch_evaluation(url, "eval-cli-cancel-queued", hold=True)
    time.sleep(3)
    assert wait_for_status(url, held, {"QUEUED"}) == "QUEUED"
    assert main(["cancel", "eval-cli-cancel-queued"]) == 0
    out = capsys.readouterr().out
    assert "1 cancelled" in out and "status: cancelled" in out
    assert wait_for_status(url, held, {"CANCELED"}, 5) == "CANCELED"

    # `rag-eval cancel` of a run a `dagster dev` worker executes: terminated through the run launcher. The
    # tiny project's run takes a second or two, and can end before the termination reaches its worker (it
    # then ends SUCCESS, or FAILURE when its process exits while the run is CANCELING: the request too
    # late, `ended_before_termination`): another is launched then, at most three in all.
    ended = []
    for attempt in range(3):
        evaluation = f"eval-cli-cancel-started-{attempt}"
        started = launch_evaluation(url, evaluation, hold=False)
        assert wait_for_status(url, started, {"STARTED", "SUCCESS", "FAILURE"}) == "STARTED"
        assert main(["cancel", started, "--wait", "120"]) == 0
        out = capsys.readouterr().out
        assert "1 cancelling" in out and "status: cancelling" in out
        assert out.rstrip().count("status: cancelled") == 1
        ended.append(wait_for_status(url, started, {"CANCELED", "SUCCESS", "FAILURE"}, 5))
        if ended[-1] != "SUCCESS" and not ended_before_termination(project, started):
            break
    assert ended[-1] == "CANCELED", ended
    assert main(["status", evaluation]) == 0
    status = capsys.readouterr().out
    assert "status: cancelled" in status
    # launched from the API: the record says so, and its evaluation step recorded the profile it read
    assert "trigger: ui by launchpad or GraphQL API" in status


def ended_before_termination(project: Path, run_id: str) -> bool:
    """Whether the run had finished every step when its termination came: Dagster then records FAILURE
    ("Run execution process ... unexpectedly exited with code 0": it exited while the run was CANCELING),
    a race of Dagster's that a run of about a second hits; the request was too late, as when the run ends
    SUCCESS."""
    from rag_eval_pipeline.runner.instance import project_instance

    with project_instance(project) as instance:
        events = [
            (e.dagster_event.event_type_value, e.message)
            for e in instance.all_logs(run_id)
            if e.dagster_event
        ]
    failed = any(kind == "STEP_FAILURE" for kind, _ in events)
    return not failed and any(message.startswith("Finished steps in process") for _, message in events)
