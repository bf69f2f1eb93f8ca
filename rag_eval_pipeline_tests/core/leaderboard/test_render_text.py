"""The terminal's leaderboard table: the terminal subset of the headline metrics as mean [CI], answer
means where answers were evaluated, the profile marked in quick mode, and the notes with their legend."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.core.leaderboard.board import TERMINAL_ANSWER_METRICS, TERMINAL_METRICS
from rag_eval_pipeline.core.leaderboard.render_text import format_leaderboard, mean_ci
from rag_eval_pipeline_tests.core.leaderboard.boards import ranked


def test_the_terminal_table_shows_the_terminal_metrics_the_answers_and_the_notes() -> None:
    header, rule, *rows = format_leaderboard(ranked(answers=True)).splitlines()
    columns = ["rank", "chunk_config", "profile", "k", *TERMINAL_METRICS, *TERMINAL_ANSWER_METRICS, "note"]
    assert header.split() == columns and set(rule) == {"-", " "}
    assert "ndcg_at_k" not in header and "hybrid" not in header  # the terminal's narrower view
    first, quick, removed, legend = rows
    assert first.split() == [
        "1",
        "fixed",
        "top2",
        "2",
        *["0.500", "[0.40-0.60]"] * 5,
        "0.250",
        "0.500",
        "0.750",
    ]
    assert "top2 (quick, 20 questions)" in quick and quick.split()[-1] == "n/a"  # the judge did not run
    assert removed.startswith("-") and removed.endswith("profile removed")
    assert legend.startswith("rank -: removed")


def test_without_answers_or_notes_the_table_has_no_such_columns() -> None:
    board = ranked(answers=False)
    board = board[~board["removed"]]
    header = format_leaderboard(board).splitlines()[0].split()
    assert header == ["rank", "chunk_config", "profile", "k", *TERMINAL_METRICS]


def test_a_missing_mean_is_not_available() -> None:
    row = pd.Series({"mrr_mean": float("nan"), "mrr_ci_low": float("nan"), "mrr_ci_high": float("nan")})
    assert mean_ci(row, "mrr") == "n/a"
