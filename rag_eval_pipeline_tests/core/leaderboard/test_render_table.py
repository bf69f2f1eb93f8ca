"""The leaderboard as the UI's table: typed columns named as a reader reads them, numbers at four
significant digits, the CI as text, no NaN (the UI parses each row as JSON)."""

from __future__ import annotations

import json

import pandas as pd

from rag_eval_pipeline.core.leaderboard.render_table import board_table
from rag_eval_pipeline.core.leaderboard.view import rank_label, row_note
from rag_eval_pipeline.core.metrics.names import HEADLINE_METRICS
from rag_eval_pipeline_tests.core.leaderboard.boards import ranked

RETRIEVAL = ["span recall", "span precision", "span IoU", "recall@k", "MRR", "nDCG@k"]


def test_every_row_in_rank_order_with_typed_rounded_cells() -> None:
    board = ranked(answers=True)
    quick = board.index[(board["chunk_config"] == "recursive") & (board["profile"] == "top2")][0]
    board.loc[quick, ["span_iou_mean", "span_iou_ci_low", "span_iou_ci_high"]] = [
        0.12055534294415841,
        0.10712345,
        0.13309876,
    ]
    board.loc[quick, "keyword_mean"] = 0.41666666666
    table = board_table(board)
    names = [c.name for c in table.columns]
    assert names[:2] == ["rank", "tier"] and names[2:7] == [
        "chunk config",
        "profile",
        "k",
        "questions",
        "mode",
    ]
    assert [n for n in names if n in RETRIEVAL] == RETRIEVAL  # every headline metric, in order
    assert names[-1] == "note" and {"keyword", "semantic (fitted)", "hybrid", "LLM judge"} <= set(names)
    types = {c.name: c.type for c in table.columns}
    assert types["k"] == types["questions"] == types["tier"] == "int"
    assert types["span IoU"] == "string" and types["keyword"] == "float"
    assert all(c.description for c in table.columns)  # the UI's "Show schema"

    records = table.records()
    assert [r["rank"] for r in records] == [rank_label(row) for _, row in board.iterrows()]
    assert [(r["chunk config"], r["profile"]) for r in records] == list(
        zip(board["chunk_config"], board["profile"], strict=True)
    )
    by_pair = {(r["chunk config"], r["profile"]): r for r in records}
    row = by_pair[("recursive", "top2")]
    assert row["span IoU"] == "0.1206 [0.1071, 0.1331]"  # mean [CI], four significant digits
    assert row["span recall"] == "0.5 [0.4, 0.6]"  # no trailing zeros
    assert row["keyword"] == 0.4167 and row["k"] == 2 and row["questions"] == 20 and row["mode"] == "quick"
    assert row["LLM judge"] is None  # no verdict: an empty cell, not NaN
    assert by_pair[("fixed", "top2")]["LLM judge"] == 0.75
    assert [r["note"] for r in records] == [row_note(r) for _, r in board.iterrows()]
    assert by_pair[("fixed", "old")]["note"].startswith("profile removed")
    # the UI parses each row as strict JSON: no NaN, no numpy scalars
    for record in records:
        assert json.loads(json.dumps(record, allow_nan=False)) == record
        assert {type(v) for v in record.values()} <= {str, int, float, type(None)}


def test_a_board_without_answers_notes_tiers_or_cis_shows_what_it_has() -> None:
    board = ranked(answers=False).drop(columns=["tier"])
    board = board[~board["removed"]].assign(note="")
    board = board.drop(columns=[c for c in board.columns if c.startswith("span_precision_ci")])
    board["llm_judge_mean"] = float("nan")  # a column without any value is left out
    table = board_table(board)
    names = [c.name for c in table.columns]
    assert "tier" not in names and "note" not in names and "LLM judge" not in names
    assert not {"keyword", "hybrid"} & set(names)
    assert table.records()[0]["span precision"] == "0.5"  # the mean alone without its CI
    board.loc[board.index[0], "mrr_mean"] = float("nan")
    assert board_table(board).records()[0]["MRR"] == "n/a"


def test_a_ranking_metric_that_is_not_a_headline_metric_comes_first() -> None:
    board = ranked(answers=False)
    board["ranked_by"] = "span_recall_1000t"
    board = board.assign(
        span_recall_1000t_mean=0.61234, span_recall_1000t_ci_low=0.5, span_recall_1000t_ci_high=0.7
    )
    table = board_table(board)
    metric_columns = [c for c in table.columns if c.name in RETRIEVAL or c.name.startswith("span recall ")]
    assert [c.name for c in metric_columns][:2] == ["span recall 1000t", "span recall"]
    assert "ranking metric" in metric_columns[0].description
    assert table.records()[0]["span recall 1000t"] == "0.6123 [0.5, 0.7]"
    assert len(metric_columns) == len(HEADLINE_METRICS) + 1


def test_an_empty_board_has_columns_and_no_rows() -> None:
    board = ranked(answers=False).iloc[0:0]
    table = board_table(pd.DataFrame(board))
    assert table.rows == () and table.records() == [] and table.columns[0].name == "rank"


def test_a_board_weighted_by_traffic_has_the_weighted_mean_after_the_ranking_metric() -> None:
    board = ranked(answers=False).assign(span_iou_weighted_mean=[0.81234567, 0.25, float("nan")])
    table = board_table(board)
    names = [c.name for c in table.columns]
    assert names[names.index("span IoU") + 1] == "span IoU weighted"
    column = table.columns[names.index("span IoU weighted")]
    assert column.type == "float" and "each question counts as often as users asked it" in column.description
    assert table.records()[0]["span IoU weighted"] == 0.8123
    assert "span IoU weighted" not in [c.name for c in board_table(ranked(answers=False)).columns]
