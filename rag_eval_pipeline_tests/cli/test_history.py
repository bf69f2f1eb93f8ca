"""`rag-eval query | compare | baseline | history` on synthetic history files in the hive layout."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.cli import exit_code
from rag_eval_pipeline.cli.history import HISTORY_COMMANDS, add_commands, run_history_command
from rag_eval_pipeline_tests.history_files import at, constant, retrieval_rows, write_run

QUESTIONS = [f"q{i:02d}" for i in range(20)]
BASE = np.linspace(0.3, 0.9, len(QUESTIONS))


def metrics(recall: np.ndarray) -> dict[str, dict[str, float]]:
    return {
        "span_recall": dict(zip(QUESTIONS, recall, strict=True)),
        "span_iou": dict(zip(QUESTIONS, BASE / 3, strict=True)),
        "recall_at_k": dict(zip(QUESTIONS, BASE, strict=True)),
        "mrr": dict(zip(QUESTIONS, BASE, strict=True)),
    }


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """Evaluation eval-a (two profiles), then eval-b where p1 gained 0.1 recall and p2 lost 0.1."""
    base = tmp_path / "warehouse"
    for evaluation, hour, gains in (("eval-a", 1, (0.0, 0.0)), ("eval-b", 2, (0.1, -0.1))):
        for profile, gain in zip(("p1", "p2"), gains, strict=True):
            frame = retrieval_rows(
                f"{evaluation}-{profile}-run",
                "c",
                profile,
                metrics(BASE + gain),
                at(hour),
                evaluation_id=evaluation,
                mode="full",
            )
            write_run(base, frame)
    return base


def run(
    warehouse: Path,
    *argv: str,
    capsys: pytest.CaptureFixture,
    settings: str = "regression:\n  n_resamples: 1000\n",
) -> tuple[int, str, str]:
    monitoring = warehouse.parent / "monitoring.yaml"
    monitoring.write_text(settings, encoding="utf-8")
    parser = argparse.ArgumentParser(prog="rag-eval")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    assert args.command in HISTORY_COMMANDS
    code = exit_code(lambda: run_history_command(args, warehouse, monitoring))
    out, err = capsys.readouterr()
    return code, out, err


def test_query_prints_a_table_csv_or_json(warehouse: Path, capsys: pytest.CaptureFixture) -> None:
    sql = "select profile, evaluation_id, count(*) as n, round(avg(span_recall), 3) as recall from retrieval_metrics group by all order by all"
    code, out, _ = run(warehouse, "query", sql, capsys=capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["profile", "evaluation_id", "n", "recall"] and set(lines[1]) == {"-", " "}
    assert lines[2].split() == ["p1", "eval-a", "20", "0.6"] and lines[5].split() == [
        "p2",
        "eval-b",
        "20",
        "0.5",
    ]
    assert lines[-1] == "(4 rows)"
    # columns line up: every value starts where its header does
    assert lines[2].index("eval-a") == lines[0].index("evaluation_id")

    code, out, _ = run(warehouse, "query", sql, "--format", "csv", capsys=capsys)
    assert list(csv.DictReader(io.StringIO(out)))[1] == {
        "profile": "p1",
        "evaluation_id": "eval-b",
        "n": "20",
        "recall": "0.7",
    }
    summary_sql = (
        "select created_at, profile, span_recall_mean from retrieval_metrics_summary order by all limit 1"
    )
    code, out, _ = run(warehouse, "query", summary_sql, "--format", "json", capsys=capsys)
    assert json.loads(out) == [
        {"created_at": "2026-01-01T03:00:00+00:00", "profile": "p1", "span_recall_mean": pytest.approx(0.6)}
    ]


def test_compare_shows_per_partition_deltas_intervals_and_verdicts(
    warehouse: Path, capsys: pytest.CaptureFixture
) -> None:
    code, out, _ = run(
        warehouse, "compare", "eval-a", "eval-b", "--metrics", "span_recall,mrr", capsys=capsys
    )
    assert code == 0
    assert out.startswith(
        "A: evaluation eval-a (full, 2 partitions)\nB: evaluation eval-b (full, 2 partitions)"
    )
    rows = {(line.split()[0], line.split()[1]): line for line in out.splitlines() if line.startswith("c|")}
    assert set(rows) == {("c|p1", "span_recall"), ("c|p1", "mrr"), ("c|p2", "span_recall"), ("c|p2", "mrr")}
    assert rows[("c|p1", "span_recall")].split()[2:6] == ["20", "0.6000", "0.7000", "+0.1000"]
    assert rows[("c|p1", "span_recall")].endswith("better")
    assert rows[("c|p2", "span_recall")].split()[5] == "-0.1000" and rows[("c|p2", "span_recall")].endswith(
        "worse"
    )
    assert rows[("c|p1", "mrr")].endswith("no significant difference")
    # run ids and prefixes work as references; a single run against a single run of another partition
    code, out, _ = run(
        warehouse, "compare", "eval-a-p1", "eval-b-p2", "--metrics", "span_recall", capsys=capsys
    )
    assert code == 0 and "c|p1 vs c|p2" in out and "-0.1000" in out


def test_compare_takes_its_confidence_from_the_monitoring_settings(
    warehouse: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ("compare", "eval-a", "eval-b", "--metrics", "span_recall")
    _, wide, _ = run(warehouse, *argv, capsys=capsys, settings="regression:\n  confidence: 0.99\n")
    _, narrow, _ = run(warehouse, *argv, capsys=capsys, settings="regression:\n  confidence: 0.8\n")
    assert "99% CI" in wide and "80% CI" in narrow
    code, _, err = run(warehouse, *argv, capsys=capsys, settings="regression:\n  confidense: 0.8\n")
    assert code == 2 and "monitoring.yaml: unknown key(s) regression.confidense" in err


def test_baseline_set_list_and_replace(warehouse: Path, capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(warehouse, "baseline", "list", capsys=capsys)
    assert code == 0 and out.startswith("no pinned baseline")
    code, out, _ = run(warehouse, "baseline", "set", "eval-a", capsys=capsys)
    assert code == 0
    assert "c|p1: baseline is run eval-a-p1-run (evaluation eval-a, full)" in out
    assert "c|p2: baseline is run eval-a-p2-run" in out
    code, out, _ = run(warehouse, "baseline", "set", "eval-b", "--partition", "c|p2", capsys=capsys)
    assert (
        code == 0
        and "c|p2: baseline is run eval-b-p2-run (evaluation eval-b, full), replacing run eval-a-p2-run"
        in out
    )
    code, out, _ = run(warehouse, "baseline", "list", capsys=capsys)
    listed = [line.split()[:3] for line in out.splitlines()[2:-1]]
    assert listed == [["c|p1", "eval-a", "eval-a-p1-run"], ["c|p2", "eval-b", "eval-b-p2-run"]]
    code, out, _ = run(warehouse, "baseline", "list", "--changes", capsys=capsys)
    assert [line.split()[2] for line in out.splitlines()[2:-1]] == [
        "eval-a-p1-run",
        "eval-a-p2-run",
        "eval-b-p2-run",
    ]
    code, _, err = run(warehouse, "baseline", "set", "eval-b", "--partition", "c|p9", capsys=capsys)
    assert code == 2 and "did not evaluate c|p9; it has c|p1, c|p2" in err


def test_history_shows_the_trend_per_partition(warehouse: Path, capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(warehouse, "history", "span_recall", "--partition", "c|p2", capsys=capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "span_recall from retrieval_metrics_summary"
    assert [line.split()[0] for line in lines[3:]] == ["c|p2", "c|p2"]
    first, second = (line.split() for line in lines[3:])
    assert first[1:4] == ["2026-01-01", "03:00:00+00:00", "eval-a"] and second[3] == "eval-b"
    assert (first[5], first[6], first[7]) == ("full", "20", "0.6000")
    assert second[7] == "0.5000" and second[8].startswith("[0.4")


def test_history_and_compare_say_where_the_questions_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 30: runs on 30, 29 and 8 questions read as one trend. A run measured otherwise than the
    partition's run before it starts a new line, and says why in the leaderboard's words; compare says
    when B was not measured like A. Files without question_set (written before it) still break where
    the dataset, the mode or the number of questions differ."""
    base = tmp_path / "warehouse"
    for evaluation, hour, n, dataset, mode in (
        ("eval-30", 1, 30, "data-1", "full"),
        ("eval-29", 2, 29, "data-2", "full"),
        ("eval-8", 3, 8, "data-2", "quick"),
        ("eval-8-again", 4, 8, "data-2", "quick"),
    ):
        values = {"span_recall": constant(0.7 if n > 8 else 0.2, n), "mrr": constant(0.5, n)}
        frame = retrieval_rows(
            f"{evaluation}-run",
            "c",
            "p",
            values,
            at(hour),
            dataset=dataset,
            evaluation_id=evaluation,
            mode=mode,
        )
        write_run(base, frame)
    code, out, _ = run(base, "history", "span_recall", capsys=capsys)
    assert code == 0
    rows = out.splitlines()[3:7]
    notes = [row.split("new line: ", 1)[1] if "new line: " in row else "" for row in rows]
    assert notes == ["", "other questions: 29 vs 30", "quick run on 8 questions vs full runs", ""]
    assert "so its mean does not continue the trend before it" in out.splitlines()[-1]

    code, out, _ = run(base, "compare", "eval-30", "eval-29", "--metrics", "span_recall", capsys=capsys)
    assert code == 0 and "c|p: B was not measured like A (other questions: 29 vs 30)" in out
    code, out, _ = run(base, "compare", "eval-8", "eval-8-again", "--metrics", "span_recall", capsys=capsys)
    assert code == 0 and "not measured like" not in out  # the same sample, the same mode: alike


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("compare", "nope", "eval-b"), "no evaluation or run 'nope'"),
        (("compare", "eval", "eval-b"), "'eval' is ambiguous"),
        (("compare", "eval-a", "eval-b", "--metrics", "recal"), "has no metric 'recal'"),
        (
            ("history", "recal"),
            "no metric 'recal' in the history; known metrics: mrr, recall_at_k, span_iou, span_recall",
        ),
        (("history", "span_recall", "--partition", "c-p1"), "a partition is written CHUNK_CONFIG|PROFILE"),
        (
            ("query", "select * from answer_metrics"),
            "answer_metrics does not exist.*history tables: retrieval_metrics",
        ),
        (("compare", "eval-a", "eval-b", "--table", "answer_metrics"), "no history table 'answer_metrics'"),
    ],
)
def test_errors_go_to_stderr_with_exit_code_2(
    warehouse: Path, capsys: pytest.CaptureFixture, argv: tuple[str, ...], message: str
) -> None:
    code, out, err = run(warehouse, *argv, capsys=capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and re.search(message, err), err
