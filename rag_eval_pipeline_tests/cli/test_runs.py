"""`rag-eval run | status | list | regenerate-questions`: on a real Dagster instance, the tiny project, and
a real `dagster dev` for `run --launch`."""

import itertools
import json
import os
import re
from contextlib import AbstractContextManager
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.runs.run_tags import (
    EVALUATION_ID_TAG,
    MODE_TAG,
    PARTITION_TAG,
    REGENERATE_DOCUMENTS_TAG,
    TRIGGER_TAG,
)
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.dagster_dev import free_port, running_dagster_dev

EVALUATION_LINE = re.compile(r"^evaluation (eval-\S+) \((quick|full) mode\)")


def evaluation_id_in(out: str) -> str:
    match = EVALUATION_LINE.match(out)
    assert match, out
    evaluation_id = match.group(1)
    assert out.rstrip().splitlines()[-1].startswith(f"evaluation {evaluation_id}: ")  # printed last too
    return evaluation_id


def words(out: str) -> str:
    """The output with its runs of spaces and line breaks as one space (aligned columns vary)."""
    return " ".join(out.split())


def runs_of(project: Path, evaluation_id: str) -> list[dg.RunRecord]:
    with project_instance(project) as instance:
        return list(instance.get_run_records(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id})))


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


def test_regenerating_an_unknown_document_exits_2_before_any_run(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["regenerate-questions", "--document", "alpha/nope.md"]) == 2
    err = capsys.readouterr().err
    assert "--document: 'alpha/nope.md' names no document of the corpus; its 3 documents are:" in err
    with project_instance(project) as instance:
        assert instance.get_runs() == []  # refused before any run
    with pytest.raises(SystemExit) as exit_info:  # one or the other
        main(["regenerate-questions", "--document", "beta/staff.md", "--all"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


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
    current = Warehouse.in_project(project).current_path(
        "retrieval_metrics", {"chunk_config": "fixed-60-0", "profile": "top2"}
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
    # ingestion and chunking were up to date (skipped, no run): the top2 partition ran again, in full mode
    assert status.startswith(f"evaluation {full_id} (full): 3 runs, 2 succeeded, 1 failed")
    assert "FAILED " in status and "evaluation_job fixed-60-0|broken: retrieval_results" in status
    metric_rows = status.split("retrieval metrics", 1)[1].splitlines()[3:]
    assert [row.split()[:4] for row in metric_rows] == [["fixed-60-0", "top2", "full", "4"]]

    assert main(["status", evaluation_run.run_id[:10]]) == 0
    assert f"part of evaluation {quick_id}" in capsys.readouterr().out

    # the run record: triggered here, by whom, the profile's version at start, questions and sample
    top2 = ProjectFiles(project).load_configs().profile("top2")
    assert main(["status", quick_id]) == 0
    record = capsys.readouterr().out.splitlines()
    assert record[1] == "status: succeeded"
    assert record[2].startswith("trigger: cli by ") and "@" in record[2]
    assert record[3] == f"profiles at start: top2 v{top2.version} {top2.config_hash}"
    assert record[4] == "questions: 4; sample size: 2"
    assert main(["status", quick_id, "--format", "json"]) == 0
    rows = {r["job"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["evaluation_job"]["question_count"] == 4 and rows["evaluation_job"]["sample_size"] == 2
    assert rows["evaluation_job"]["profiles"] == {"top2": f"v{top2.version} {top2.config_hash}"}
    assert {r["trigger"] for r in rows.values()} == {"cli"}

    assert main(["list", "--limit", "2"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed[2:]] == [full_id, quick_id]
    assert listed[2].split()[3:9] == ["full", "3", "2", "1", "0", "2"]
    assert listed[3].split()[3:9] == ["quick", "4", "4", "0", "0", "1"]
    # then: cancelled, status, trigger, by, questions, sample
    assert listed[2].split()[9:12] == ["0", "failed", "cli"] and listed[2].split()[13:] == ["4", "-"]
    assert listed[3].split()[9:12] == ["0", "succeeded", "cli"] and listed[3].split()[13:] == ["4", "2"]
    assert main(["list", "--limit", "1", "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.startswith("evaluation_id,started,mode,runs,succeeded,failed,cancelled,in_progress")
    assert row.startswith(f"{full_id},")


@pytest.mark.slow
def test_regenerate_questions_overrides_the_generator_for_one_run(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    settings = "evaluate_on: both\ntoken_level:\n  generator: excerpt-first\n  n_questions: 6\n  passage_min_chars: 40\n"
    (project / "data/generation.yaml").write_text(settings, encoding="utf-8")
    assert main(["regenerate-questions", "--generator", "known-item"]) == 0
    out = capsys.readouterr().out
    table = pd.read_parquet(Warehouse.in_project(project).current_path("synthetic_questions"))
    assert set(table["generator"]) == {"known-item"}
    accepted, rejected = (
        int((table["status"] == "accepted").sum()),
        int((table["status"] == "rejected").sum()),
    )
    assert accepted > 0
    assert f"synthetic_questions (known-item): {accepted} accepted, {rejected} rejected" in out
    assert "asked for 6 questions (n_questions: 6): " in out  # how many were asked for, and why
    assert re.search(
        r"removed by: generator \(its own checks\) \d+, deduplicate \(cosine >= 0.9\) \d+, retrievability \(off\) 0",
        out,
    )
    assert f"eval_questions: {4 + accepted} questions from the both set" in out
    assert (project / "data/generation.yaml").read_text(encoding="utf-8") == settings

    # one document's questions again, the others kept as they were (the run tagged with it)
    first_run = str(table["run_id"].iloc[0])
    argv = [
        "regenerate-questions",
        "--generator",
        "known-item",
        "--document",
        "alpha/*.md",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["documents"] == ["alpha/pumps.md", "alpha/valves.md"]
    after = pd.read_parquet(Warehouse.in_project(project).current_path("synthetic_questions"))
    staff = after[after["source_doc_ids"].map(lambda ids: list(ids) == ["beta/staff.md"])]
    assert record["kept"] == int((staff["status"] == "accepted").sum()) > 0
    assert set(staff["generated_run_id"]) == {first_run}  # kept, with the run that made them
    with project_instance(project) as instance:
        (tagged,) = instance.get_runs(
            dg.RunsFilter(tags={REGENERATE_DOCUMENTS_TAG: '["alpha/pumps.md", "alpha/valves.md"]'})
        )
    assert tagged.run_id == record["run_id"] and tagged.tags[TRIGGER_TAG] == "cli"


@pytest.mark.slow
def test_an_edited_objective_alone_reranks_the_board_that_run_prints(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["run", "--chunk-configs", "fixed-60-0"]) == 0
    first = capsys.readouterr().out
    recommended = next(line for line in first.splitlines() if line.startswith("Recommended: "))
    assert ", span_recall_1000t " in recommended  # the default objective
    assert "ranked by: span_recall_1000t, span recall within the first 1,000 tokens" in words(first)
    assert "tier 1: these 2 setups are statistically tied on span_recall_1000t" in words(first)

    # only the objective changes: nothing is evaluated again, the leaderboard is built again
    (project / "data/monitoring.yaml").write_text(
        "leaderboard:\n  rank_by: mrr\n  context_budget_tokens: null\n", encoding="utf-8"
    )
    assert main(["run", "--chunk-configs", "fixed-60-0"]) == 0
    second = capsys.readouterr().out
    assert "up to date: nothing the leaderboard reads changed" not in second
    assert "ranked by: mrr, mrr over each setup's k chunks" in words(second)
    assert next(line for line in second.splitlines() if line.startswith("Recommended: ")).count(", mrr ") == 1
    evaluation_id = evaluation_id_in(second)
    ran = {r.dagster_run.job_name for r in runs_of(project, evaluation_id)}
    assert ran == {"leaderboard_job"}, ran
    board = pd.read_parquet(Warehouse.in_project(project).current_path("leaderboard"))
    assert set(board["ranked_by"]) == {"mrr"}

    assert main(["leaderboard"]) == 0  # the stored board says the same
    assert "ranked by: mrr, mrr over each setup's k chunks" in words(capsys.readouterr().out)


# ---------------------------------------------------------------------------------------------------
# run --launch against a real `dagster dev`


def dagster_dev(project: Path) -> AbstractContextManager[str]:
    """`dagster dev` for the project, without the services the test must not reach; its sensors stopped
    before the daemon starts (the test sees only the runs it launched)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "QDRANT_URL")}
    env["RAG_EVAL_PROJECT_DIR"] = str(project)
    return running_dagster_dev(project, env=env, sensors=False)


@pytest.mark.slow
def test_launch_submits_stage_by_stage_to_dagster_dev(project: Path, capsys: pytest.CaptureFixture) -> None:
    profiles = project / "data/retrieval_profiles.yaml"
    profiles.write_text(
        profiles.read_text() + "  - name: broken\n    top_k: 2\n    reranker: models/missing\n",
        encoding="utf-8",
    )
    with dagster_dev(project) as url:
        code = main(["run", "--launch", url, "--chunk-configs", "fixed-60-0", "--profiles", "top2,broken"])
        captured = capsys.readouterr()
    assert code == 2, captured.err  # one partition failed on bad input (its profile); the others ran
    assert "FAILED: evaluate fixed-60-0 x broken" in captured.err and "models/missing" in captured.err
    evaluation_id = evaluation_id_in(captured.out)
    assert "submitted to " + url in captured.out.splitlines()[0]
    assert "Recommended: fixed-60-0 x top2" in captured.out, captured.out  # what the launched runs wrote
    records = runs_of(project, evaluation_id)
    with project_instance(project) as instance:  # no sensor launched a run of its own
        assert instance.get_runs_count() == len(records)
    assert sorted((r.dagster_run.job_name, r.dagster_run.tags.get(PARTITION_TAG, "")) for r in records) == [
        ("chunking_job", "fixed-60-0"),
        ("evaluation_job", "fixed-60-0|broken"),
        ("evaluation_job", "fixed-60-0|top2"),
        ("ingestion_job", ""),
        ("leaderboard_job", ""),
    ]
    failed = {
        r.dagster_run.tags.get(PARTITION_TAG)
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
