"""`rag-eval run | status | list | regenerate-questions`: on a real Dagster instance, the tiny project, and
a real `dagster dev` for `run --launch`."""

import dataclasses
import itertools
import os
import re
import time
from contextlib import AbstractContextManager
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.processes import ProcessIdentity
from rag_eval_pipeline.lib.evaluation_runs import EVALUATION_ID_TAG, MODE_TAG
from rag_eval_pipeline.lib.io_managers import history_path
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline.runner.in_process import PROCESS_TAG
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline.runner.outcome import EvaluationOutcome, RunOutcome, blocked_reason
from rag_eval_pipeline.runner.plan import PARTITION_TAG, EvaluationRequest, plan_main_job, run_config_for
from rag_eval_pipeline.runner.resume import plan_resume
from rag_eval_pipeline.runner.run_failures import RunFailure, failure_of_run
from rag_eval_pipeline.runner.run_status import (
    UnknownReference,
    evaluation_status,
    find_runs,
    format_evaluations,
    recent_evaluations,
)
from rag_eval_pipeline_tests.dagster_dev import free_port, graphql, running_dagster_dev

EVALUATION_LINE = re.compile(r"^evaluation (eval-\S+) \((quick|full) mode\)")


@pytest.fixture
def project(tiny_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny project as `rag-eval` finds it: RAG_EVAL_PROJECT_DIR, its own dagster.yaml instance."""
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tiny_project))
    for name in (
        "DAGSTER_HOME",
        "OPENAI_API_KEY",
        "QDRANT_URL",
        "LANGSMITH_API_KEY",
        "RAG_EVAL_WAREHOUSE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tiny_project)  # main() changes directory; monkeypatch changes it back
    return tiny_project


def evaluation_id_in(out: str) -> str:
    match = EVALUATION_LINE.match(out)
    assert match, out
    evaluation_id = match.group(1)
    assert out.rstrip().splitlines()[-1].startswith(f"evaluation {evaluation_id}: ")  # printed last too
    return evaluation_id


def runs_of(project: Path, evaluation_id: str) -> list[dg.RunRecord]:
    with project_instance(project) as instance:
        return list(instance.get_run_records(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id})))


# ---------------------------------------------------------------------------------------------------
# the plan


def test_plan_runs_stage_by_stage_and_only_evaluation_runs_get_the_mode(tiny_project: Path) -> None:
    configs = ProjectResource(root=str(tiny_project)).load_configs()
    plan = plan_main_job(configs, ["recursive-120-20"], None)
    assert [(r.job_name, r.partition_key) for r in plan] == [
        ("ingestion_job", None),
        ("chunking_job", "recursive-120-20"),
        ("evaluation_job", "recursive-120-20|top2"),
        ("evaluation_job", "recursive-120-20|top4"),
        ("leaderboard_job", None),
    ]
    assert plan[2].partition_tags() == {
        "dagster/partition": "recursive-120-20|top2",
        "dagster/partition/chunk_config": "recursive-120-20",
        "dagster/partition/profile": "top2",
    }
    assert plan[1].partition_tags() == {"dagster/partition": "recursive-120-20"}
    assert run_config_for(plan[2], "quick", 3) == {
        "resources": {"evaluation": {"config": {"mode": "quick", "sample_size": 3}}}
    }
    assert run_config_for(plan[1], "quick") == {}
    with pytest.raises(ValueError, match="unknown profile"):
        plan_main_job(configs, None, ["top2", "nope"])


def test_runs_that_need_what_failed_do_not_start_and_the_outcome_counts_them(tiny_project: Path) -> None:
    configs = ProjectResource(root=str(tiny_project)).load_configs()
    plan = plan_main_job(configs, None, ["top2"])
    ingestion, chunk_fixed, chunk_recursive, eval_fixed, eval_recursive, board = plan
    bad_config = RunFailure("chunk config 'recursive-120-20': unknown chunker", bad_input=True)
    done = [
        RunOutcome(ingestion, "succeeded", "r1"),
        RunOutcome(chunk_fixed, "succeeded", "r2"),
        RunOutcome(chunk_recursive, "failed", "r3", bad_config),
    ]
    assert blocked_reason(eval_fixed, done) == ""
    assert blocked_reason(eval_recursive, done) == "chunking recursive-120-20 failed"
    done += [
        RunOutcome(eval_fixed, "failed", "r4", RunFailure("OSError: [Errno 28] No space left on device")),
        RunOutcome(eval_recursive, "not run", blocked_by="chunking recursive-120-20 failed"),
    ]
    assert blocked_reason(board, done) == "no evaluation run succeeded"
    assert blocked_reason(board, done, evaluated_before=True) == ""  # a resume: earlier ones did
    outcome = EvaluationOutcome(
        EvaluationRequest.of_plan(plan, "eval-x", "full", None),
        (*done, RunOutcome(board, "not run", blocked_by="no evaluation run succeeded")),
    )
    assert outcome.counts() == "6 runs planned, 4 ran (2 succeeded, 2 failed), 2 not run"
    assert outcome.not_run_lines() == [
        "chunking recursive-120-20 failed, so 1 run did not start: evaluate recursive-120-20 x top2",
        "no evaluation run succeeded, so 1 run did not start: leaderboard",
    ]
    assert outcome.exit_code == 2  # one failure is bad input
    assert EvaluationOutcome(outcome.request, (done[0], done[1], done[3])).exit_code == 1
    assert outcome.request.tags()["rag_eval/chunk_configs"] == "fixed-60-0,recursive-120-20"
    assert EvaluationRequest.of_tags(outcome.request.tags()) == outcome.request


# ---------------------------------------------------------------------------------------------------
# status and list over runs made here (small jobs named like the pipeline's)


@dg.op
def succeeds() -> None:
    pass


@dg.op
def fails() -> None:
    raise dg.Failure("the reranker folder models/missing does not exist: fix the profile")


def job(name: str, op: dg.OpDefinition) -> dg.JobDefinition:
    @dg.job(name=name)
    def made() -> None:
        op()

    return made


def run(instance: dg.DagsterInstance, name: str, tags: dict[str, str], ok: bool = True) -> str:
    result = job(name, succeeds if ok else fails).execute_in_process(
        instance=instance, tags=tags, raise_on_error=False
    )
    return result.run_id


def summary_row(warehouse: Path, run_id: str, chunk_config: str, profile: str, **extra: object) -> None:
    """A retrieval_metrics_summary history file as retrieval_metrics writes it (older ones lack
    evaluation_id and evaluation_mode)."""
    row = {"run_id": run_id, "chunk_config": chunk_config, "profile": profile, "n_questions": 3, **extra}
    for metric, mean in (("span_recall", 0.9), ("span_iou", 0.4), ("recall_at_k", 0.8), ("mrr", 0.7)):
        row |= {f"{metric}_mean": mean, f"{metric}_ci_low": mean - 0.1, f"{metric}_ci_high": mean + 0.05}
    path = history_path(
        warehouse, "retrieval_metrics_summary", {"chunk_config": chunk_config, "profile": profile}, run_id
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([row]).to_parquet(path)


def partition(key: str) -> dict[str, str]:
    config, profile = key.split("|")
    return {
        "dagster/partition": key,
        "dagster/partition/chunk_config": config,
        "dagster/partition/profile": profile,
    }


def test_status_and_list_group_runs_by_evaluation(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    quick = {EVALUATION_ID_TAG: "eval-a", MODE_TAG: "quick"}
    with dg.instance_for_test() as instance:
        run(instance, "ingestion_job", quick)
        good = run(instance, "evaluation_job", quick | partition("c1|p1"))
        summary_row(warehouse, good, "c1", "p1", evaluation_id="eval-a", evaluation_mode="quick")
        run(instance, "evaluation_job", quick | partition("c1|p2"), ok=False)
        run(instance, "ingestion_job", {EVALUATION_ID_TAG: "eval-ab", MODE_TAG: "full"})
        lone = run(instance, "evaluation_job", partition("c2|p1"))  # launched on its own, before ids
        summary_row(warehouse, lone, "c2", "p1")

        listed = recent_evaluations(instance, limit=10)
        assert [s.evaluation_id for s in listed] == [lone, "eval-ab", "eval-a"]
        eval_a = listed[2]
        assert (len(eval_a.runs), eval_a.mode, eval_a.partitions) == (3, "quick", "2")
        assert (eval_a.counts["succeeded"], eval_a.counts["failed"]) == (2, 1)
        table = format_evaluations(listed)
        assert "evaluation_job c2|p1" in table.splitlines()[2]
        assert [s.evaluation_id for s in recent_evaluations(instance, limit=1)] == [lone]

        status = evaluation_status(instance, "eval-a", warehouse)
        assert status.startswith("evaluation eval-a (quick): 3 runs, 2 succeeded, 1 failed")
        assert "FAILURE" in status
        assert "fails: the reranker folder models/missing does not exist: fix the profile" in status
        metrics = status.split("retrieval metrics", 1)[1].splitlines()
        assert metrics[3].split()[:4] == ["c1", "p1", "quick", "3"]
        assert "0.900 [0.80-0.95]" in metrics[3]
        assert len(metrics) == 4  # the lone run's row is not part of eval-a

        lone_status = evaluation_status(instance, lone[:8], warehouse)  # a prefix of a run id
        assert lone_status.startswith(f"run {lone}: evaluation_job c2|p1")
        assert lone_status.split("retrieval metrics", 1)[1].splitlines()[3].split()[:4] == [
            "c2",
            "p1",
            "full",
            "3",
        ]

        assert find_runs(instance, "eval-ab").kind == "evaluation"  # exact before prefix
        with pytest.raises(UnknownReference, match="matches 2 runs or evaluations"):
            find_runs(instance, "eval-")
        with pytest.raises(UnknownReference, match="no run and no evaluation matches 'nope'"):
            find_runs(instance, "nope")


def started_run(instance: dg.DagsterInstance, name: str, tags: dict[str, str]) -> dg.DagsterRun:
    """A run the instance has as STARTED, as a process leaves it that is killed while executing it."""
    from dagster._core.utils import make_new_run_id

    return instance.add_run(
        dg.DagsterRun(job_name=name, run_id=make_new_run_id(), status=dg.DagsterRunStatus.STARTED, tags=tags)
    )


def test_resume_marks_dead_runs_failed_refuses_live_ones_and_replans_untagged_evaluations(
    tiny_project: Path,
) -> None:
    configs = ProjectResource(root=str(tiny_project)).load_configs()
    me = ProcessIdentity.current()
    with dg.instance_for_test() as instance:
        # the nightly schedule's evaluations carry no selection: they resume the runs they made
        nightly = {EVALUATION_ID_TAG: "nightly-1", MODE_TAG: "quick"}
        run(instance, "evaluation_job", nightly | partition("fixed-60-0|top2"))
        run(instance, "evaluation_job", nightly | partition("fixed-60-0|top4"), ok=False)
        resume = plan_resume(instance, "nightly-1", configs)
        assert [r.label for r in resume.to_run] == ["evaluate fixed-60-0 x top4", "leaderboard"]
        assert (resume.request.mode, resume.evaluated_before) == ("quick", True)
        assert EvaluationRequest.of_tags(resume.request.tags()) is None  # still replanned from runs

        # a run whose process is gone (here: the pid now belongs to a process started later) is failed
        planned = EvaluationRequest("eval-k", "full", ("fixed-60-0",), ("top2",))
        dead = dataclasses.replace(me, start_ticks=str(int(me.start_ticks) - 1)).to_text()
        for job_name in ("ingestion_job", "chunking_job"):
            run(
                instance,
                job_name,
                planned.tags() | ({PARTITION_TAG: "fixed-60-0"} if "chunk" in job_name else {}),
            )
        killed = started_run(
            instance, "evaluation_job", planned.tags() | partition("fixed-60-0|top2") | {PROCESS_TAG: dead}
        )
        resume = plan_resume(instance, "eval-k", configs)
        assert [r.label for r in resume.to_run] == ["evaluate fixed-60-0 x top2", "leaderboard"]
        assert resume.evaluated_before is False
        assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
        assert "is gone" in str(failure_of_run(instance, killed.run_id))

        # a run whose process lives (this one) is in progress: no resume races it
        started_run(instance, "leaderboard_job", planned.tags() | {PROCESS_TAG: me.to_text()})
        with pytest.raises(InputError, match="still has 1 run"):
            plan_resume(instance, "eval-k", configs)
        with pytest.raises(UnknownReference, match="no evaluation 'eval-nope'"):
            plan_resume(instance, "eval-nope", configs)


def test_status_of_an_unknown_ref_exits_2_and_list_says_when_there_is_nothing(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["list"]) == 0
    assert "no runs yet" in capsys.readouterr().out
    assert main(["status", "eval-nope"]) == 2
    assert "no run and no evaluation matches 'eval-nope'" in capsys.readouterr().err


def test_launch_says_clearly_when_nothing_listens(project: Path, capsys: pytest.CaptureFixture) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["run", "--launch", url, "--profiles", "top2"]) == 2
    err = capsys.readouterr().err
    assert f"nothing answers at {url}" in err and "dagster dev" in err
    assert main(["run", "--sample-size", "3"]) == 2  # a sample needs quick mode
    assert "--mode quick" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# the real pipeline, in process


@pytest.mark.slow
def test_quick_and_full_runs_are_evaluations_that_status_and_list_report(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    (project / "data/monitoring.yaml").write_text("quick:\n  sample_size: 2\n", encoding="utf-8")
    profiles = project / "data/retrieval_profiles.yaml"
    profiles.write_text(
        profiles.read_text() + "  - name: broken\n    top_k: 2\n    reranker: models/missing\n",
        encoding="utf-8",
    )
    current = (
        project / "data/warehouse/current/retrieval_metrics/chunk_config=fixed-60-0/profile=top2.parquet"
    )

    assert main(["run", "--mode", "quick", "--chunk-configs", "fixed-60-0", "--profiles", "top2"]) == 0
    quick_id = evaluation_id_in(capsys.readouterr().out)
    quick_runs = runs_of(project, quick_id)
    assert len(quick_runs) == 4
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in quick_runs)
    assert {r.dagster_run.tags[MODE_TAG] for r in quick_runs} == {"quick"}
    evaluation_run = next(r.dagster_run for r in quick_runs if r.dagster_run.job_name == "evaluation_job")
    assert evaluation_run.run_config["resources"]["evaluation"]["config"] == {"mode": "quick"}
    rows = pd.read_parquet(current)
    assert len(rows) == 2  # quick.sample_size of data/monitoring.yaml, of the 4 questions
    assert set(rows["evaluation_id"]) == {quick_id} and set(rows["evaluation_mode"]) == {"quick"}

    # the reranker folder is bad input (a config error): exit 2, while the other partition still ran
    assert main(["run", "--chunk-configs", "fixed-60-0", "--profiles", "top2,broken"]) == 2
    captured = capsys.readouterr()
    full_id = evaluation_id_in(captured.out)
    assert full_id != quick_id
    assert "FAILED: evaluate fixed-60-0 x broken" in captured.err and "models/missing" in captured.err
    assert len(pd.read_parquet(current)) == 4  # full mode: every question

    assert main(["status", full_id]) == 0
    status = capsys.readouterr().out
    assert status.startswith(f"evaluation {full_id} (full): 5 runs, 4 succeeded, 1 failed")
    assert "FAILED " in status and "evaluation_job fixed-60-0|broken: retrieval_results" in status
    metric_rows = status.split("retrieval metrics", 1)[1].splitlines()[3:]
    assert [row.split()[:4] for row in metric_rows] == [["fixed-60-0", "top2", "full", "4"]]

    assert main(["status", evaluation_run.run_id[:10]]) == 0
    assert f"part of evaluation {quick_id}" in capsys.readouterr().out

    assert main(["list", "--limit", "2"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed[2:]] == [full_id, quick_id]
    assert listed[2].split()[3:9] == ["full", "5", "4", "1", "0", "2"]
    assert listed[3].split()[3:9] == ["quick", "4", "4", "0", "0", "1"]


@pytest.mark.slow
def test_regenerate_questions_overrides_the_generator_for_one_run(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    settings = "evaluate_on: both\ntoken_level:\n  generator: excerpt-first\n  n_questions: 6\n  passage_min_chars: 40\n"
    (project / "data/generation.yaml").write_text(settings, encoding="utf-8")
    assert main(["regenerate-questions", "--generator", "known-item"]) == 0
    out = capsys.readouterr().out
    table = pd.read_parquet(project / "data/warehouse/current/synthetic_questions.parquet")
    assert set(table["generator"]) == {"known-item"}
    accepted, rejected = (
        int((table["status"] == "accepted").sum()),
        int((table["status"] == "rejected").sum()),
    )
    assert accepted > 0
    assert f"synthetic_questions (known-item): {accepted} accepted, {rejected} rejected" in out
    assert f"eval_questions: {4 + accepted} questions from the both set" in out
    assert (project / "data/generation.yaml").read_text(encoding="utf-8") == settings


# ---------------------------------------------------------------------------------------------------
# run --launch against a real `dagster dev`


def dagster_dev(project: Path) -> AbstractContextManager[str]:
    """`dagster dev` for the project, without the services the test must not reach."""
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "QDRANT_URL")}
    env["RAG_EVAL_PROJECT_DIR"] = str(project)
    return running_dagster_dev(project, env=env)


def stop_sensors(url: str) -> None:
    """The automation sensor would also materialize what the evaluation changes, in runs of its own;
    stopped here so the test sees only the runs the CLI submitted (and the 2 run slots stay free)."""
    deadline = time.monotonic() + 180
    while True:
        data = graphql(
            url,
            "{ repositoriesOrError { ... on RepositoryConnection { nodes { sensors { name jobOriginId "
            "sensorState { selectorId status } } } } } }",
        )
        nodes = ((data.get("data") or {}).get("repositoriesOrError") or {}).get("nodes") or []
        if nodes:
            break
        assert time.monotonic() < deadline, "the code location did not load within 180 s"
        time.sleep(1)
    for sensor in nodes[0]["sensors"]:
        if sensor["sensorState"]["status"] == "RUNNING":
            origin, selector = sensor["jobOriginId"], sensor["sensorState"]["selectorId"]
            query = f'mutation {{ stopSensor(jobOriginId: "{origin}", jobSelectorId: "{selector}") {{ __typename }} }}'
            assert "errors" not in graphql(url, query), sensor["name"]


@pytest.mark.slow
def test_launch_submits_stage_by_stage_to_dagster_dev(project: Path, capsys: pytest.CaptureFixture) -> None:
    profiles = project / "data/retrieval_profiles.yaml"
    profiles.write_text(
        profiles.read_text() + "  - name: broken\n    top_k: 2\n    reranker: models/missing\n",
        encoding="utf-8",
    )
    with dagster_dev(project) as url:
        stop_sensors(url)
        code = main(["run", "--launch", url, "--chunk-configs", "fixed-60-0", "--profiles", "top2,broken"])
        captured = capsys.readouterr()
    assert code == 2, captured.err  # one partition failed on bad input (its profile); the others ran
    assert "FAILED: evaluate fixed-60-0 x broken" in captured.err and "models/missing" in captured.err
    evaluation_id = evaluation_id_in(captured.out)
    assert "submitted to " + url in captured.out.splitlines()[0]
    assert "fixed-60-0" in captured.out.splitlines()[3]  # the leaderboard the launched runs wrote
    records = runs_of(project, evaluation_id)
    assert sorted(
        (r.dagster_run.job_name, r.dagster_run.tags.get("dagster/partition", "")) for r in records
    ) == [
        ("chunking_job", "fixed-60-0"),
        ("evaluation_job", "fixed-60-0|broken"),
        ("evaluation_job", "fixed-60-0|top2"),
        ("ingestion_job", ""),
        ("leaderboard_job", ""),
    ]
    failed = {
        r.dagster_run.tags.get("dagster/partition")
        for r in records
        if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS
    }
    assert failed == {"fixed-60-0|broken"}
    assert {r.dagster_run.tags[MODE_TAG] for r in records} == {"full"}
    evaluation = [r for r in records if r.dagster_run.job_name == "evaluation_job"]
    assert all(
        r.dagster_run.run_config["resources"]["evaluation"]["config"] == {"mode": "full"} for r in evaluation
    )
    stages = ["ingestion_job", "chunking_job", "evaluation_job", "leaderboard_job"]
    by_stage = [[r for r in records if r.dagster_run.job_name == job] for job in stages]
    for before, after in itertools.pairwise(by_stage):  # each stage waited for the one before
        assert min(r.start_time or 0 for r in after) >= max(r.end_time or float("inf") for r in before)
