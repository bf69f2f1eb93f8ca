"""The terminal's leaderboard: the recommendation, then the table: the terminal subset of the headline
metrics as mean [CI], answer means where answers were evaluated, the profile marked in quick mode, and
the notes with their legend."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.core.leaderboard.board import TERMINAL_ANSWER_METRICS, TERMINAL_METRICS
from rag_eval_pipeline.core.leaderboard.render_text import format_leaderboard, format_recommendation, mean_ci
from rag_eval_pipeline_tests.core.leaderboard.boards import ranked


def test_the_terminal_table_shows_the_terminal_metrics_the_answers_and_the_notes() -> None:
    board = ranked(answers=True)
    block, table = format_leaderboard(board).split("\n\n", 1)
    assert block == format_recommendation(board) and block.startswith("Recommended: fixed x top2, span_iou")
    header, rule, *rows = table.splitlines()
    columns = ["rank", "chunk_config", "profile", "k", *TERMINAL_METRICS, *TERMINAL_ANSWER_METRICS, "note"]
    assert header.split() == columns and set(rule) == {"-", " "}
    assert "ndcg_at_k" not in header and "hybrid" not in header  # the terminal's narrower view
    first, quick, removed, not_ranked, legend = rows
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
    assert "top2 (quick, 20 questions)" in quick and quick.startswith("*")  # not ranked with full runs
    # the judge did not run; the note says why the row is not ranked
    assert " ".join(quick.split()[-9:]) == "n/a quick run on 20 questions vs full runs"
    assert removed.startswith("-") and removed.endswith("profile removed")
    assert not_ranked.startswith("rank *: not ranked") and legend.startswith("rank -: removed")


def test_without_answers_or_notes_the_table_has_no_such_columns() -> None:
    board = ranked(answers=False)
    board = board[~board["removed"] & board["rank"].notna()]
    header = format_leaderboard(board).split("\n\n", 1)[1].splitlines()[0].split()
    assert header == ["rank", "chunk_config", "profile", "k", *TERMINAL_METRICS]


def test_the_tier_and_the_objective_have_columns_when_the_board_has_them() -> None:
    board = ranked(answers=False).assign(
        tier=pd.array([1, None, None], dtype="Int64"),
        ranked_by="span_recall_1000t",
        span_recall_1000t_mean=[0.81, 0.7, 0.6],
        span_recall_1000t_ci_low=[0.75, 0.6, 0.5],
        span_recall_1000t_ci_high=[0.86, 0.8, 0.7],
    )
    header, _, first, *_ = format_leaderboard(board).split("\n\n", 1)[1].splitlines()
    assert header.split()[:6] == ["rank", "tier", "chunk_config", "profile", "k", "span_recall_1000t"]
    assert first.split()[:6] == ["1", "1", "fixed", "top2", "2", "0.810"]


def test_a_missing_mean_is_not_available() -> None:
    row = pd.Series({"mrr_mean": float("nan"), "mrr_ci_low": float("nan"), "mrr_ci_high": float("nan")})
    assert mean_ci(row, "mrr") == "n/a"


def test_a_board_weighted_by_traffic_shows_the_objectives_weighted_mean_and_says_which_is_which() -> None:
    board = ranked(answers=False).assign(span_iou_weighted_mean=[0.8125, 0.25, float("nan")])
    text = format_leaderboard(board)
    header = next(line for line in text.splitlines() if line.startswith("rank"))
    assert header.split()[4:10] == [
        "span_recall",
        "span_precision",
        "span_iou",
        "span_iou",
        "weighted",
        "recall_at_k",
    ]
    first = next(line for line in text.splitlines() if line.startswith("1 "))
    assert "0.500 [0.40-0.60]  0.812" in first  # span IoU, then its weighted mean
    assert text.splitlines()[-1] == (
        "span_iou: each question counts once; span_iou weighted: each question counts as often as users "
        "asked it (its count), the mean over the traffic"
    )
    assert "weighted" not in format_leaderboard(ranked(answers=False))
