"""`rag-eval questions list|stats` on the warehouse's eval_questions table, and `rag-eval results REF` on
real runs of the project's Dagster instance and the retrieval_metrics history files they wrote."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, read_token_level_jsonl
from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.tables import GROUND_TRUTH_STATUS, questions_to_frame
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.runner.runs import partition, run

TYPES = {"tiny-1": "factual", "tiny-2": "factual", "tiny-3": "multi-hop", "tiny-4": "cross-document"}


@pytest.fixture
def questions(project: Path) -> Path:
    """The tiny golden set with question types, as eval_questions stores it (tiny-3 stale)."""
    golden = read_token_level_jsonl(
        project / "data/datasets/golden_token_level.jsonl", Corpus.from_folder(project / "data/corpus")
    )
    typed = TokenLevelDataset(
        tuple(replace(e, metadata={**e.metadata, "question_type": TYPES[e.question_id]}) for e in golden),
        name="golden",
    )
    frame = questions_to_frame(typed)
    frame[GROUND_TRUTH_STATUS] = ["ok", "reanchored", "stale", "ok"]
    Warehouse.in_project(project).write_table(frame, "eval_questions", {}, "ingestion-run")
    return project


def test_questions_list_filters_by_type_and_document_and_pages(
    questions: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["questions", "list", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [q["question_id"] for q in listed] == ["tiny-1", "tiny-2", "tiny-3", "tiny-4"]
    assert listed[3] == {
        "question_id": "tiny-4",
        "type": "cross-document",
        "documents": ["alpha/valves.md", "beta/staff.md"],
        "status": "ok",
        "generator": "",
        "question": "Which valve feeds the cooling loop, and who leads maintenance?",
    }
    assert main(["questions", "list", "--type", "FACTUAL", "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert [line.split(",")[0] for line in out.out.splitlines()] == ["question_id", "tiny-1", "tiny-2"]
    assert "questions 1-2 of 2" in out.err
    assert main(["questions", "list", "--document", "beta/*.md", "--limit", "1", "--offset", "1"]) == 0
    out = capsys.readouterr()
    assert "tiny-4" in out.out and "tiny-3" not in out.out
    assert "questions 2-2 of 2" in out.err


def test_questions_stats_count_by_type_and_by_document(
    questions: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["questions", "stats", "--format", "json"]) == 0
    rows = {(r["group"], r["key"]): r["questions"] for r in json.loads(capsys.readouterr().out)}
    assert rows[("total", "questions")] == 3  # tiny-3 is stale: not evaluated, counted apart
    assert rows[("total", "stale (not evaluated)")] == 1
    assert rows[("total", "about two or more documents")] == 1
    assert {k: v for (g, k), v in rows.items() if g == "type"} == {"factual": 2, "cross-document": 1}
    assert {k: v for (g, k), v in rows.items() if g == "document"} == {
        "alpha/pumps.md": 2,
        "alpha/valves.md": 1,
        "beta/staff.md": 1,  # tiny-4 counts under both of its documents
    }


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["questions", "list", "--type", "opinion"],
            "--type opinion: no question has that type; the types: cross-document, factual, multi-hop",
        ),
        (
            ["questions", "list", "--document", "gamma/x.md"],
            "--document gamma/x.md: no question is about that document",
        ),
        (["questions", "list", "--limit", "0"], "--limit must be >= 1"),
    ],
)
def test_questions_bad_filters_exit_2(
    questions: Path, capsys: pytest.CaptureFixture, argv: list[str], expected: str
) -> None:
    assert main(argv) == 2
    assert expected in capsys.readouterr().err


def test_without_questions_yet_it_says_how_to_make_them(project: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["questions", "stats"]) == 1
    assert "no evaluation questions yet" in capsys.readouterr().err


def metric_rows(run_id: str, chunk_config: str, profile: str, typed: bool) -> pd.DataFrame:
    """retrieval_metrics history rows as the asset writes them (older ones without question_type)."""
    rows = pd.DataFrame(
        {
            "question_id": ["tiny-1", "tiny-2", "tiny-4"],
            "span_recall": [1.0, 0.5, 0.25],
            "mrr": [1.0, 0.5, 0.0],
            "run_id": run_id,
            "chunk_config": chunk_config,
            "profile": profile,
            "evaluation_mode": "full",
        }
    )
    if typed:
        rows.insert(1, "question_type", ["factual", "factual", "cross-document"])
    return rows


def test_results_of_an_evaluation_filter_by_question_type_profile_and_chunk_config_and_page(
    questions: Path, capsys: pytest.CaptureFixture
) -> None:
    evaluation = "eval-20260101T000000-rslt"
    warehouse = Warehouse.in_project(questions)
    with project_instance(questions) as instance:
        for key, typed in (
            ("fixed-60-0|top2", True),
            ("fixed-60-0|top4", False),
            ("recursive-120-20|top2", True),
        ):
            run_id = run(instance, "evaluation_job", {EVALUATION_ID_TAG: evaluation, **partition(key)})
            chunk_config, profile = key.split("|")
            warehouse.write_history(
                metric_rows(run_id, chunk_config, profile, typed),
                "retrieval_metrics",
                {"chunk_config": chunk_config, "profile": profile},
                run_id,
            )
        run(instance, "leaderboard_job", {EVALUATION_ID_TAG: evaluation})

    assert main(["results", evaluation, "--format", "json"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)
    assert len(rows) == 9 and "rows 1-9 of 9" in out.err
    assert [(r["chunk_config"], r["profile"]) for r in rows[::3]] == [
        ("fixed-60-0", "top2"),
        ("fixed-60-0", "top4"),
        ("recursive-120-20", "top2"),
    ]
    # the older rows' types come from the questions
    assert {r["question_id"]: r["question_type"] for r in rows if r["profile"] == "top4"} == {
        "tiny-1": "factual",
        "tiny-2": "factual",
        "tiny-4": "cross-document",
    }

    argv = ["results", evaluation[:18], "--question-type", "factual", "--profile", "top2"]
    assert main([*argv, "--limit", "2", "--offset", "1", "--format", "csv"]) == 0
    out = capsys.readouterr()
    table = [line.split(",") for line in out.out.splitlines()]
    assert table[0][:4] == ["chunk_config", "profile", "question_id", "question_type"]
    assert [row[:3] for row in table[1:]] == [
        ["fixed-60-0", "top2", "tiny-2"],
        ["recursive-120-20", "top2", "tiny-1"],
    ]
    assert "rows 2-3 of 4; --offset 3 for the next page" in out.err

    assert (
        main(
            ["results", evaluation, "--chunk-config", "recursive-120-20", "--question-type", "cross-document"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "recursive-120-20  top2     tiny-4" in out and "(1 row)" in out

    for bad, expected in (
        (
            ["--profile", "dense"],
            "--profile dense: evaluation " + evaluation + " did not evaluate it; it evaluated: top2, top4",
        ),
        (["--question-type", "opinion"], "has no question of that type; its types: cross-document, factual"),
        (["--offset", "-1"], "--offset >= 0"),
    ):
        assert main(["results", evaluation, *bad]) == 2
        assert expected in capsys.readouterr().err
    assert main(["results", "eval-nope"]) == 2
    assert "no run and no evaluation matches 'eval-nope'" in capsys.readouterr().err
