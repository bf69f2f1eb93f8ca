"""Ranking the leaderboard: removed configs listed but not ranked, and the reference rule that marks rows
computed on other questions or with another answer threshold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from rag_eval_pipeline.core.leaderboard.ranking import (
    ConfiguredNames,
    first_ranked,
    footnotes,
    rank_board,
    rank_label,
    reference_value,
    row_note,
)

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
CONFIGURED = ConfiguredNames(frozenset({"fixed", "recursive"}), frozenset({"top2", "top4"}))


def row(
    chunk_config: str,
    profile: str,
    iou: float,
    dataset: str = "d1",
    n: int = 85,
    threshold: float | None = 0.7,
    how: str = "fitted",
    hours_ago: int = 1,
    mode: str = "full",
) -> dict[str, object]:
    return {
        "chunk_config": chunk_config,
        "profile": profile,
        "span_iou_mean": iou,
        "span_recall_mean": 0.5,
        "dataset_sha256": dataset,
        "n_questions": n,
        "evaluation_mode": mode,
        "answer_threshold": float("nan") if threshold is None else threshold,
        "answer_threshold_how": how,
        "metrics_created_at": NOW - timedelta(hours=hours_ago),
    }


def pairs(board: pd.DataFrame) -> list[tuple[str, str, str]]:
    return [(r["chunk_config"], r["profile"], rank_label(r)) for _, r in board.iterrows()]


def test_removed_rows_follow_the_ranked_ones_without_a_rank() -> None:
    board = rank_board(
        pd.DataFrame(
            [
                row("gone", "top2", 0.9),
                row("fixed", "top2", 0.3),
                row("fixed", "old", 0.5),
                row("recursive", "top4", 0.4),
            ]
        ),
        CONFIGURED,
    )
    assert pairs(board) == [
        ("recursive", "top4", "1"),
        ("fixed", "top2", "2"),
        ("gone", "top2", "-"),  # the best span IoU, but no longer a choice
        ("fixed", "old", "-"),
    ]
    assert board["rank"].dtype == "Int64" and board["rank"].isna().sum() == 2
    assert [row_note(r) for _, r in board.iterrows()] == ["", "", "chunk config removed", "profile removed"]
    assert first_ranked(board)["chunk_config"] == "recursive"  # type: ignore[index]
    assert any(line.startswith("rank -: removed") for line in footnotes(board))


def test_unreadable_config_files_rank_every_row_and_say_so() -> None:
    board = rank_board(pd.DataFrame([row("gone", "top2", 0.9), row("fixed", "top2", 0.3)]), None)
    assert pairs(board) == [("gone", "top2", "1"), ("fixed", "top2", "2")]
    assert board["removed"].isna().all()
    assert footnotes(board) == [
        "the config files could not be read: every row is ranked, none is marked removed"
    ]


def test_rows_on_other_questions_keep_their_rank_with_a_marker_and_a_note() -> None:
    board = rank_board(
        pd.DataFrame(
            [
                row("fixed", "top2", 0.5, dataset="d2", n=76, hours_ago=0),
                row("fixed", "top4", 0.4),
                row("recursive", "top2", 0.3),
            ]
        ),
        CONFIGURED,
    )
    assert pairs(board) == [("fixed", "top2", "1*"), ("fixed", "top4", "2"), ("recursive", "top2", "3")]
    assert list(board["other_dataset"]) == [True, False, False]
    assert row_note(board.iloc[0]) == "other questions: 76 vs 85"
    (legend,) = footnotes(board)
    assert legend.startswith("rank N*: not comparable") and "reference: 85 questions, dataset d1" in legend


def test_the_threshold_reference_is_the_majority_and_a_tie_goes_to_the_newest() -> None:
    majority = rank_board(
        pd.DataFrame(
            [
                row("fixed", "top2", 0.5, threshold=0.75, how="fixed"),
                row("fixed", "top4", 0.4),
                row("recursive", "top2", 0.3),
                row("recursive", "top4", 0.2, threshold=None),  # no answer metrics: not compared
            ]
        ),
        CONFIGURED,
    )
    assert list(majority["other_threshold"]) == [True, False, False, False]
    assert row_note(majority.iloc[0]) == "threshold 0.75 (fixed) vs 0.70 (fitted)"

    tie = rank_board(
        pd.DataFrame(
            [
                row("fixed", "top2", 0.5, threshold=0.75, hours_ago=5),
                row("fixed", "top4", 0.4, threshold=0.70, hours_ago=1),
            ]
        ),
        CONFIGURED,
    )
    assert list(tie["other_threshold"]) == [True, False]
    assert row_note(tie.iloc[0]) == "threshold 0.75 vs 0.70"


def test_removed_rows_do_not_count_for_the_reference_but_are_compared_with_it() -> None:
    board = rank_board(
        pd.DataFrame(
            [
                row("gone", "top2", 0.9, dataset="d0", hours_ago=9),
                row("gone", "top4", 0.8, dataset="d0", hours_ago=9),
                row("fixed", "top2", 0.5),
            ]
        ),
        CONFIGURED,
    )
    assert list(board["other_dataset"]) == [False, True, True]
    assert row_note(board.iloc[1]) == "chunk config removed; other questions: dataset d0 vs d1"


def test_reference_value_ties_go_to_the_most_recent_row() -> None:
    when = pd.Series([NOW, NOW - timedelta(days=1), NOW + timedelta(days=1), NOW])
    assert reference_value(pd.Series(["a", "a", "b", "b"]), when) == "b"
    assert reference_value(pd.Series(["a", "a", "b", None]), when) == "a"
    assert reference_value(pd.Series([None, None, None, None], dtype="string"), when) is None


def test_boards_written_before_the_marks_render_as_before() -> None:
    old = pd.DataFrame([{"rank": 1, "chunk_config": "fixed", "profile": "top2"}])
    assert rank_label(old.iloc[0]) == "1" and row_note(old.iloc[0]) == "" and footnotes(old) == []
