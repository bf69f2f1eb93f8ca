"""The traffic-weighted mean of the objective in the HTML report and the asset's markdown: right after
the objective's mean when the rows carry ``<objective>_weighted_mean``, with the legend line every view
prints (core/metrics/traffic.py); nothing changes without the column."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.core.leaderboard.labels import label
from rag_eval_pipeline.core.leaderboard.render_html import render_report
from rag_eval_pipeline.core.leaderboard.render_markdown import leaderboard_markdown
from rag_eval_pipeline.core.leaderboard.view import footnotes
from rag_eval_pipeline.core.metrics.names import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS
from rag_eval_pipeline.core.metrics.traffic import traffic_legend
from rag_eval_pipeline_tests.chromium import parse_dom
from rag_eval_pipeline_tests.core.leaderboard.boards import ranked
from rag_eval_pipeline_tests.core.leaderboard.test_render_html import NOW, board_frame
from rag_eval_pipeline_tests.core.leaderboard.test_render_markdown import cells

WEIGHTED = [0.81234, 0.25, float("nan"), 0.5]  # one row without a weighted mean (n/a)


def test_the_report_shows_the_weighted_mean_after_the_objective_with_its_legend() -> None:
    board = board_frame().assign(span_iou_weighted_mean=WEIGHTED)  # ranked by span IoU
    table = parse_dom(render_report(board, pd.DataFrame(), generated_at=NOW)).find("table", id="leaderboard")
    heads = [th.attrs.get("data-metric") for th in table.find("thead").find_all("th")]
    at = heads.index("span_iou")
    assert heads[at + 1] == "span_iou_weighted_mean"
    assert table.find("th", data_metric="span_iou_weighted_mean").text() == "span IoU weighted"
    rows = table.find("tbody").find_all("tr")
    values = [[td.attrs.get("data-metric") for td in r.find_all("td")] for r in rows]
    assert all(v.index("span_iou_weighted_mean") == v.index("span_iou") + 1 for v in values)
    shown = [r.find("td", data_metric="span_iou_weighted_mean").text() for r in rows]
    assert shown == ["0.812", "0.250", "n/a", "0.500"]
    assert len(table.find_all("td", class_="weighted")) == len(rows) and table.find_all(
        "th", class_="weighted"
    )
    html = render_report(board, pd.DataFrame(), generated_at=NOW)
    legend = parse_dom(html).find("p", id="traffic-legend").text()
    assert legend == traffic_legend(label("span_iou"), "span IoU weighted")


def test_without_weighted_means_the_report_is_unchanged() -> None:
    plain = render_report(board_frame(), pd.DataFrame(), generated_at=NOW)
    dom = parse_dom(plain)
    assert not dom.find_all("th", class_="weighted") and not dom.find_all("td", class_="weighted")
    assert not dom.find_all("p", id="traffic-legend")
    # a column with no value on any row is no weighted mean either
    empty = board_frame().assign(span_iou_weighted_mean=float("nan"))
    assert render_report(empty, pd.DataFrame(), generated_at=NOW) == plain


def test_the_markdown_shows_the_weighted_mean_after_the_objective_with_its_legend() -> None:
    plain = ranked(answers=False)
    board = plain.assign(span_iou_weighted_mean=[0.8, 0.25, float("nan")])  # ranked by span IoU
    header, _, first, quick, _, blank, *legend = leaderboard_markdown(board).splitlines()
    columns = cells(header)
    assert columns[columns.index("span_iou") + 1] == "span_iou weighted"
    assert cells(first)[columns.index("span_iou weighted")] == "0.800"
    assert cells(quick)[columns.index("span_iou weighted")] == "0.250"
    assert legend == [
        f"{line}  " for line in [*footnotes(board), traffic_legend("span_iou", "span_iou weighted")]
    ]
    assert blank == ""
    # without the column: the markdown as it was
    assert leaderboard_markdown(plain.assign(span_iou_weighted_mean=float("nan"))) == leaderboard_markdown(
        plain
    )
    assert "weighted" not in leaderboard_markdown(plain)


def test_an_objective_that_is_no_headline_metric_comes_first_with_its_weighted_mean() -> None:
    board = ranked(answers=False)
    board = board[~board["removed"] & board["rank"].notna()]
    metric = "span_recall_1000t"
    board = board.assign(
        ranked_by=metric,
        **{f"{metric}_mean": 0.6, f"{metric}_ci_low": 0.5, f"{metric}_ci_high": 0.7},
    )
    unweighted = cells(leaderboard_markdown(board).splitlines()[0])
    assert unweighted == ["rank", "chunk config", "profile", *HEADLINE_METRICS, *HEADLINE_ANSWER_METRICS]
    lines = leaderboard_markdown(board.assign(**{f"{metric}_weighted_mean": 0.65})).splitlines()
    assert cells(lines[0])[3:5] == [metric, f"{metric} weighted"]
    assert cells(lines[2])[3:5] == ["0.600 [0.500, 0.700]", "0.650"]
    assert lines[-1] == f"{traffic_legend(metric, f'{metric} weighted')}  "
