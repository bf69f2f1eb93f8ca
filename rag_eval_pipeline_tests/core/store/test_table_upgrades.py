"""Tables written before some of their columns existed read back in the current shape, once, where the
warehouse reads them (core/store/table_upgrades.py); a table in the current shape reads back as written; and
the leaderboard and history commands work on the old files."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_eval_pipeline.cli import history as history_command
from rag_eval_pipeline.cli import leaderboard as leaderboard_command
from rag_eval_pipeline.core.generation.regeneration import GENERATED_RUN_ID
from rag_eval_pipeline.core.leaderboard.board import ANSWER_MEANS, build_board
from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames
from rag_eval_pipeline.core.leaderboard.render_text import format_leaderboard
from rag_eval_pipeline.core.leaderboard.view import footnotes, rank_label, row_note
from rag_eval_pipeline.core.metrics.names import HEADLINE_METRICS, SPAN_IOU, SPAN_RECALL
from rag_eval_pipeline.core.metrics.reference_copies import DUPLICATION_COLUMNS, RUN_DUPLICATION_COLUMNS
from rag_eval_pipeline.core.settings.monitoring_settings import LeaderboardSettings
from rag_eval_pipeline.core.store.table_upgrades import LEADERBOARD_DEFAULTS, RETRIEVAL_METRICS_DEFAULTS
from rag_eval_pipeline.core.store.warehouse import LEADERBOARD, Warehouse

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
PARTITION = {"chunk_config": "fixed", "profile": "top2"}
CONFIGURED = ConfiguredNames(frozenset({"fixed"}), frozenset({"top2"}))


def write_raw(path: Path, frame: pd.DataFrame) -> None:
    """A file as an older version of the package wrote it: plain Parquet, no upgrade on the way in."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


def old_retrieval_metrics() -> pd.DataFrame:
    """retrieval_metrics as written before evaluation tags, document scopes, stale counts, the profile's
    version and retrievers, the questions' generators, LangSmith URLs and duplication counts."""
    return pd.DataFrame(
        {
            "question_id": ["q0", "q1", "q2"],
            "chunk_config": "fixed",
            "profile": "top2",
            "top_k": 2,
            SPAN_IOU: [0.2, 0.4, 0.6],
            SPAN_RECALL: [0.5, 0.5, 0.5],
            "run_id": "r-old",
            "created_at": pd.Timestamp(NOW),
            "chunk_config_hash": "c",
            "profile_hash": "p",
            "embedder_model_id": "e",
            "corpus_sha256": "corpus",
            "dataset_sha256": "d1",
        }
    )


def old_answer_metrics() -> pd.DataFrame:
    """answer_metrics as written before the semantic_dynamic threshold was recorded."""
    return pd.DataFrame(
        {
            "question_id": ["q0", "q1"],
            "chunk_config": "fixed",
            "profile": "top2",
            "run_id": "a-old",
            "answerer": "extractive",
            **{m: [0.5, 0.5] for m in ANSWER_MEANS},
            **{f"{m}_status": "ok" for m in ANSWER_MEANS},
            "keyword": [1.0, 0.0],
            "semantic_validation": "n/a",
            "escalated": False,
        }
    )


def old_board() -> pd.DataFrame:
    """A leaderboard stored before the objective's constraints, flags and notes: an unranked row was a
    removed one."""
    return pd.DataFrame(
        {
            "rank": pd.array([1, None], dtype="Int64"),
            "chunk_config": ["fixed", "gone"],
            "profile": ["top2", "top2"],
            "top_k": [2, 2],
            "n_questions": [3, 3],
            "dataset_sha256": ["d1", "d1"],
            "metrics_created_at": [pd.Timestamp(NOW)] * 2,
            **{f"{m}_mean": [0.4, 0.9] for m in HEADLINE_METRICS},
            **{f"{m}_ci_low": [0.3, 0.8] for m in HEADLINE_METRICS},
            **{f"{m}_ci_high": [0.5, 1.0] for m in HEADLINE_METRICS},
        }
    )


def test_an_old_retrieval_metrics_table_reads_back_upgraded_and_builds_the_board(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path)
    write_raw(warehouse.current_path("retrieval_metrics", PARTITION), old_retrieval_metrics())
    write_raw(warehouse.current_path("answer_metrics", PARTITION), old_answer_metrics())
    metrics = warehouse.read_current("retrieval_metrics", PARTITION)
    answers = warehouse.read_current("answer_metrics", PARTITION)
    assert metrics is not None and answers is not None
    first = metrics.iloc[0]
    assert {c: first[c] for c in RETRIEVAL_METRICS_DEFAULTS} == dict(RETRIEVAL_METRICS_DEFAULTS)
    assert (first["evaluation_id"], first["evaluation_mode"]) == ("r-old", "full")
    assert all(metrics[c].isna().all() and str(metrics[c].dtype) == "Int64" for c in DUPLICATION_COLUMNS)
    assert answers["threshold"].isna().all() and answers["threshold_how"].isna().all()
    board = build_board(
        {"fixed|top2": metrics},
        {"fixed|top2": answers},
        pd.DataFrame(),
        CONFIGURED,
        LeaderboardSettings(rank_by=SPAN_IOU, context_budget_tokens=None),
    )
    assert board is not None
    row = board.iloc[0]
    assert (row["document_scope"], row["n_stale_questions"], row["question_generators"]) == ("", 0, "")
    assert all(pd.isna(row[c]) for c in RUN_DUPLICATION_COLUMNS)  # unknown, not 0
    assert pd.isna(row["answer_threshold"]) and pd.isna(row["answer_threshold_how"])
    assert rank_label(row) == "1" and row["keyword_mean"] == 0.5
    assert footnotes(board) == []  # no duplication or known-item footnote for what is unknown


def test_a_table_in_the_current_shape_reads_back_as_written(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path)
    current = old_retrieval_metrics().assign(
        evaluation_id="e1",
        evaluation_mode="quick",
        document_scope="docs-a",
        n_stale_questions=2,
        profile_version="3",
        retrievers="dense",
        question_generators="llm",
        experiment_url="https://example.org/x",
        duplicated_references=pd.array([0, 1, 0], dtype="Int64"),
        extra_reference_copies=pd.array([0, 2, 0], dtype="Int64"),
    )
    path = warehouse.write_table(current, "retrieval_metrics", PARTITION, "r-old")
    pd.testing.assert_frame_equal(
        warehouse.read_current("retrieval_metrics", PARTITION), pd.read_parquet(path)
    )
    history = warehouse.read_runs("retrieval_metrics", [("r-old", PARTITION)])
    pd.testing.assert_frame_equal(history, pd.read_parquet(path))


def test_an_old_board_reads_back_upgraded_and_the_leaderboard_command_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    warehouse = Warehouse(tmp_path)
    write_raw(warehouse.current_path(LEADERBOARD), old_board())
    board = warehouse.read_current(LEADERBOARD)
    assert board is not None
    assert list(board["removed"]) == [False, True]  # before the constraints, the unranked row was removed
    assert {c: board[c].iloc[0] for c in LEADERBOARD_DEFAULTS if c != "removed"} == pytest.approx(
        {c: v for c, v in LEADERBOARD_DEFAULTS.items() if c != "removed"}, nan_ok=True
    )
    assert [rank_label(r) for _, r in board.iterrows()] == ["1", "-"] and row_note(board.iloc[0]) == ""
    assert "ranked_by" not in board.columns  # before the objective: the views say span IoU
    parser = argparse.ArgumentParser(prog="rag-eval")
    leaderboard_command.add_commands(parser.add_subparsers(dest="command"))
    assert leaderboard_command.run_leaderboard_command(parser.parse_args(["leaderboard"]), warehouse) == 0
    out = capsys.readouterr().out
    assert out.strip() == format_leaderboard(board).strip()
    assert "fixed" in out and "gone" in out and "removed" in out


def test_the_history_command_reads_old_per_question_files(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    warehouse = Warehouse(tmp_path / "warehouse")
    old = old_retrieval_metrics()
    write_raw(warehouse.history_path("retrieval_metrics", PARTITION, "r-old"), old)
    summary = old.drop(columns=["question_id", SPAN_IOU, SPAN_RECALL]).head(1)
    summary = summary.assign(n_questions=3, **{f"{SPAN_IOU}_mean": 0.4, f"{SPAN_IOU}_ci_low": 0.3})
    write_raw(warehouse.history_path("retrieval_metrics_summary", PARTITION, "r-old"), summary)
    read = warehouse.read_history("retrieval_metrics", ["run_id", "document_scope", "evaluation_mode"])
    assert (
        read.frame.to_dict("records")
        == [{"run_id": "r-old", "document_scope": "", "evaluation_mode": "full"}] * 3
    )
    monitoring = tmp_path / "monitoring.yaml"
    monitoring.write_text("regression:\n  n_resamples: 1000\n", encoding="utf-8")
    parser = argparse.ArgumentParser(prog="rag-eval")
    history_command.add_commands(parser.add_subparsers(dest="command"))
    code = history_command.run_history_command(
        parser.parse_args(["history", SPAN_IOU]), warehouse.base_dir, monitoring
    )
    out = capsys.readouterr().out
    assert code == 0 and "r-old" in out and "0.4000" in out and "full" in out


def test_old_synthetic_questions_read_back_with_the_run_that_generated_each_row(tmp_path: Path) -> None:
    warehouse = Warehouse(tmp_path)
    old = pd.DataFrame({"question_id": ["q0", "q1"], "status": "accepted", "run_id": ["r1", "r1"]})
    write_raw(warehouse.current_path("synthetic_questions"), old)
    read = warehouse.read_current("synthetic_questions")
    assert read is not None and list(read[GENERATED_RUN_ID]) == ["r1", "r1"]  # every row by its writer
    current = old.assign(**{GENERATED_RUN_ID: ["r0", "r1"]})
    write_raw(warehouse.current_path("synthetic_questions"), current)
    pd.testing.assert_frame_equal(warehouse.read_current("synthetic_questions"), current)
