"""The HTML report: rendered by headless Chromium, the page holds the leaderboard table, one scatter
point per partition and one trend series per partition, from real Parquet history files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.leaderboard.board import TREND_METRICS
from rag_eval_pipeline.core.leaderboard.labels import label
from rag_eval_pipeline.core.leaderboard.pareto import front_rows
from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames, rank_board
from rag_eval_pipeline.core.leaderboard.render_html import HISTORY_COLUMNS, render_report, write_report
from rag_eval_pipeline.core.leaderboard.view import footnotes, ranked_by
from rag_eval_pipeline.core.metrics.names import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS
from rag_eval_pipeline.core.store.table_upgrades import upgrade_leaderboard
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline_tests import chromium as chromium_module
from rag_eval_pipeline_tests.chromium import Node, parse_dom, rendered_dom

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
# (chunk config, profile, span recall, span precision) in rank order
BOARD = [
    ("recursive-120-20", "top2", 0.82, 0.31),
    ("fixed-60-0", "top2", 0.74, 0.27),
    ("recursive-120-20", "top4", 0.91, 0.18),
    ("fixed-60-0", "top4", 0.88, 0.15),
]
# evaluations per partition: (days ago, run id, mode); None = a file from before evaluation_mode existed
RUNS: dict[tuple[str, str], list[tuple[int, str, str | None]]] = {
    ("recursive-120-20", "top2"): [(3, "r1", None), (2, "r2", "full"), (0, "r3", "full")],
    ("fixed-60-0", "top2"): [(2, "f1", "full"), (1, "f2", "quick")],
    ("recursive-120-20", "top4"): [(0, "r4", "full")],
    ("fixed-60-0", "top4"): [(3, "f3", None), (0, "f4", "full")],
    ("ghost-config", "top2"): [(5, "g1", "full")],  # a config removed from the file since
}


def board_frame(rows: list[tuple[str, str, float, float]] = BOARD, answers: bool = True) -> pd.DataFrame:
    records = []
    for rank, (config, profile, recall, precision) in enumerate(rows, start=1):
        row: dict[str, object] = {
            "run_id": "board-run",
            "rank": rank,
            "chunk_config": config,
            "profile": profile,
            "top_k": 2 if profile == "top2" else 4,
            "n_questions": 4,
            "profile_version": "1",
            "metrics_created_at": NOW,
        }
        values = {"span_recall": recall, "span_precision": precision, "span_iou": recall * precision}
        for i, metric in enumerate(HEADLINE_METRICS):
            mean = values.get(metric, 0.5 + 0.01 * rank + 0.001 * i)
            row |= {f"{metric}_mean": mean, f"{metric}_ci_low": mean - 0.05, f"{metric}_ci_high": mean + 0.04}
        if answers:
            row |= {"keyword_mean": 0.25 * rank, "semantic_dynamic_mean": 0.5, "llm_judge_mean": float("nan")}
        k = 2 if profile == "top2" else 4
        row |= {
            "context_tokens_mean": 100.0 * k + 7 * rank,
            "latency_p50_ms": 0.5 * k,
            "latency_p95_ms": 0.8 * k,
            "usd_per_1k_questions": 0.03 * k,
            "index_bytes": 250_000.0,
            "index_usd": 0.0,
        }
        records.append(row)
    # a board as stored before the ranking's flags existed, read as the warehouse reads it
    return upgrade_leaderboard(pd.DataFrame(records))


def trend_value(metric: str, run: str) -> float:
    """A distinct mean per metric and run, so a point shows which row it came from."""
    return round(0.1 + 0.1 * TREND_METRICS.index(metric) + 0.01 * (sum(map(ord, run)) % 50), 6)


def write_history(warehouse: Path) -> None:
    w = Warehouse(warehouse)
    for (config, profile), runs in RUNS.items():
        for days, run, mode in runs:
            row: dict[str, object] = {
                "run_id": run,
                "created_at": NOW - timedelta(days=days),
                "chunk_config": config,
                "profile": profile,
                "n_questions": 4,
                **{f"{m}_mean": trend_value(m, run) for m in TREND_METRICS},
            }
            if mode is not None:  # newer files: both columns
                row |= {"evaluation_id": f"eval-{run}", "evaluation_mode": mode}
            w.write_history(
                pd.DataFrame([row]), RETRIEVAL_SUMMARY, {"chunk_config": config, "profile": profile}, run
            )


def series_of(panel: Node) -> dict[tuple[str, str], Node]:
    return {
        (s.attrs["data-chunk-config"], s.attrs["data-profile"]): s
        for s in panel.find_all("g", class_="series")
    }


@pytest.mark.slow  # Chromium
def test_the_report_shows_the_table_the_scatter_and_the_trends_in_chromium(tmp_path: Path):
    warehouse = tmp_path / "warehouse"
    write_history(warehouse)
    w = Warehouse(warehouse)
    w.history_path(
        RETRIEVAL_SUMMARY, {"chunk_config": "fixed-60-0", "profile": "top2"}, "broken"
    ).write_bytes(b"not parquet")
    board = board_frame()
    files = write_report(board, w, "board-run", generated_at=NOW)
    assert files.paths == w.report_paths("board-run")
    assert files.paths.current.read_bytes() == files.paths.snapshot.read_bytes()
    assert files.history_files == 10 and len(files.problems) == 1  # nine runs' files and the broken one
    assert not list((warehouse / "reports").rglob("*.tmp"))

    dom = rendered_dom(files.paths.current, tmp_path)
    pairs = [(c, p) for c, p, _, _ in BOARD]

    # the table: one row per partition, in rank order, with names, CIs and answer columns
    table = dom.find("table", id="leaderboard")
    headers = [th.text() for th in table.find_all("th")]
    assert headers[:5] == ["rank", "chunk config", "profile", "k", "questions"]
    assert {"span recall", "span IoU", "MRR", "nDCG@k", "keyword", "semantic (fitted)", "LLM judge"} <= set(
        headers
    )
    rows = table.find("tbody").find_all("tr")
    assert [(r.attrs["data-chunk-config"], r.attrs["data-profile"]) for r in rows] == pairs
    assert [r.find("td", data_column="chunk_config").text() for r in rows] == [c for c, _ in pairs]
    first_recall = rows[0].find("td", data_metric="span_recall").text()
    assert first_recall == "0.820[0.77, 0.86]"  # mean and its CI
    assert rows[2].find("td", data_metric="span_recall").attrs["class"] == "num best"
    assert rows[0].find("td", data_metric="llm_judge").text() == "n/a"

    # the scatter: one point per partition, a colour per profile, a shape per chunk config, axes that agree
    scatter = dom.find("svg", id="scatter")
    points = scatter.find_all(class_="point")
    assert sorted((p.attrs["data-chunk-config"], p.attrs["data-profile"]) for p in points) == sorted(pairs)
    by_pair = {(p.attrs["data-chunk-config"], p.attrs["data-profile"]): p for p in points}
    for config, profile, recall, precision in BOARD:
        point = by_pair[(config, profile)]
        assert float(point.attrs["data-span-recall"]) == pytest.approx(recall)
        assert float(point.attrs["data-span-precision"]) == pytest.approx(precision)
    cx = {k: float(p.attrs["data-cx"]) for k, p in by_pair.items()}
    cy = {k: float(p.attrs["data-cy"]) for k, p in by_pair.items()}
    assert sorted(cx, key=cx.__getitem__) == sorted(cx, key=lambda k: next(b[3] for b in BOARD if b[:2] == k))
    assert sorted(cy, key=cy.__getitem__) == sorted(
        cy, key=lambda k: -next(b[2] for b in BOARD if b[:2] == k)
    )
    series = scatter.find_all("g", class_="series")
    assert sorted(s.attrs["data-profile"] for s in series) == ["top2", "top4"]
    assert len({s.attrs["fill"] for s in series}) == 2
    shapes = {p.attrs["data-chunk-config"]: p.attrs["data-shape"] for p in points}
    assert len(set(shapes.values())) == 2 and all(
        p.attrs["data-shape"] == shapes[p.attrs["data-chunk-config"]] for p in points
    )
    # named: the front, the points no other beats on both recall and precision
    labels = [t.text() for t in scatter.find_all("text", class_="point-label")]
    assert sorted(labels) == ["recursive-120-20 × top2", "recursive-120-20 × top4"]
    assert sorted(
        p.attrs["data-chunk-config"] + p.attrs["data-profile"]
        for p in points
        if p.attrs["data-front"] == "yes"
    ) == [
        "recursive-120-20top2",
        "recursive-120-20top4",
    ]
    axis_titles = [t.text() for t in scatter.find_all("text", class_="axis-title")]
    assert axis_titles == ["span precision (mean)", "span recall (mean)"]

    # quality against cost: a point per ranked setup at its context and score; the front named, joined,
    # and marked in the table of every setup's costs
    chart = dom.find("svg", id="cost-chart")
    drawn = {
        (p.attrs["data-chunk-config"], p.attrs["data-profile"]): p for p in chart.find_all(class_="point")
    }
    assert sorted(drawn) == sorted(pairs)
    front = {(s.row["chunk_config"], s.row["profile"]) for s in front_rows(board)}
    assert {k for k, p in drawn.items() if p.attrs["data-front"] == "yes"} == front and 1 <= len(front) < 4
    assert {
        (t.attrs["data-chunk-config"], t.attrs["data-profile"])
        for t in chart.find_all("text", class_="point-label")
    } <= front
    assert len(chart.find_all("path", class_="front-line")) == (1 if len(front) > 1 else 0)
    for (config, profile), point in drawn.items():
        expected = board[(board["chunk_config"] == config) & (board["profile"] == profile)].iloc[0]
        assert float(point.attrs["data-context-tokens"]) == pytest.approx(expected["context_tokens_mean"])
        assert float(point.attrs["data-span-iou"]) == pytest.approx(expected["span_iou_mean"])
    costs = dom.find("table", id="costs").find("tbody").find_all("tr")
    assert [(r.attrs["data-chunk-config"], r.attrs["data-profile"]) for r in costs] == pairs
    assert {
        (r.attrs["data-chunk-config"], r.attrs["data-profile"])
        for r in costs
        if r.attrs["data-front"] == "yes"
    } == front
    first = {c.attrs["data-cost"]: c.text() for c in costs[0].find_all("td") if "data-cost" in c.attrs}
    assert first == {
        "context_tokens_mean": "207",
        "latency_p50_ms": "1 ms",
        "latency_p95_ms": "1.6 ms",
        "usd_per_1k_questions": "$0.06",
        "index_bytes": "250 KB",
        "index_usd": "$0",
    }
    assert [th.text() for th in table.find_all("th", class_="cost")] == ["context tokens", "p95 search (ms)"]

    # the trends: a panel per metric, a line per partition on the board evaluated twice or more, a point
    # per evaluation
    trends = dom.find("svg", id="trends")
    panels = trends.find_all("g", class_="panel")
    assert [p.attrs["data-metric"] for p in panels] == list(TREND_METRICS)
    for panel in panels:
        metric = panel.attrs["data-metric"]
        lines = series_of(panel)
        # not the ghost config (not on the board), nor recursive-120-20 x top4 (one evaluation)
        assert sorted(lines) == sorted(p for p in pairs if p != ("recursive-120-20", "top4"))
        for pair, line in lines.items():
            circles = line.find_all(class_="point")
            runs = sorted(RUNS[pair])[::-1]  # oldest first
            assert [c.attrs["data-run-id"] for c in circles] == [run for _, run, _ in runs]
            assert [float(c.attrs["data-value"]) for c in circles] == pytest.approx(
                [trend_value(metric, run) for _, run, _ in runs]
            )
            if pair == ("fixed-60-0", "top2"):
                continue  # below: not measured alike, so not one line
            # one line through every point, oldest first
            xs = [float(x.split(",")[0]) for x in line.find("polyline").attrs["points"].split()]
            assert xs == sorted(xs) and len(set(xs)) == len(xs) == len(circles)
        quick = lines[("fixed-60-0", "top2")]  # a full run and a quick one (hollow) on a sample: no line
        assert [c.attrs["data-mode"] for c in quick.find_all(class_="point")] == ["full", "quick"]
        assert [c.attrs["fill"] for c in quick.find_all(class_="point")][1] == "#fff"
        assert not quick.find_all("polyline")
        assert quick.find(class_="break").attrs["data-break"] == "quick run on 4 questions vs full runs"
        three = lines[("recursive-120-20", "top2")]  # the old file counts as a full evaluation
        assert len(three.find("polyline").attrs["points"].split()) == 3
        assert len({s.attrs["stroke"] for s in lines.values()}) == len(lines)  # a colour each
    single = dom.find("p", id="trends-single").text()
    assert "recursive-120-20 × top4" in single and "fixed-60-0 × top2" not in single
    breaks = dom.find("p", id="trends-breaks").text()
    assert "fixed-60-0 × top2 from " in breaks and "quick run on 4 questions vs full runs" in breaks

    notes = dom.find("section", id="notes").text()
    assert "ghost-config x top2" in notes and "broken.parquet" in notes

    # self-contained: nothing to fetch, no script to fail
    assert not dom.find_all("script") and not dom.find_all("link")
    assert not [n for n in dom.walk() if any(k in ("src", "href") for k in n.attrs)]


@pytest.mark.slow  # Chromium
def test_names_from_user_files_are_escaped_in_the_browser(tmp_path: Path):
    evil = '<b>bold</b>&"quoted"'
    board = board_frame([(evil, "top<2>", 0.8, 0.3)])
    page = tmp_path / "report.html"
    page.write_text(render_report(board, pd.DataFrame(), generated_at=NOW), encoding="utf-8")
    dom = rendered_dom(page, tmp_path)
    assert not dom.find_all("b")
    row = dom.find("table", id="leaderboard").find("tbody").find("tr")
    assert row.find("td", data_column="chunk_config").text() == evil
    assert row.attrs["data-profile"] == "top<2>"
    point = dom.find("svg", id="scatter").find(class_="point")
    assert point.attrs["data-chunk-config"] == evil
    assert "no history yet for" in dom.find("section", id="notes").text()


def test_the_same_inputs_give_the_same_page_apart_from_the_time(tmp_path: Path):
    write_history(tmp_path)
    history = Warehouse(tmp_path).read_history(
        RETRIEVAL_SUMMARY, (*HISTORY_COLUMNS, *(f"{m}_mean" for m in TREND_METRICS))
    )
    board = board_frame()
    first = render_report(board, history.frame, generated_at=NOW)
    assert render_report(board.copy(), history.frame.copy(), generated_at=NOW) == first
    later = render_report(board, history.frame, generated_at=NOW + timedelta(hours=1))
    assert later != first
    assert later.replace("2026-05-01 13:00:00 UTC", "2026-05-01 12:00:00 UTC") == first


def test_a_board_without_answer_or_ci_columns_still_renders():
    board = board_frame(answers=False)
    board = board.drop(columns=[c for c in board.columns if c.endswith(("_ci_low", "_ci_high"))])
    dom = parse_dom(render_report(board, pd.DataFrame(), generated_at=NOW))
    headers = [th.text() for th in dom.find("table", id="leaderboard").find_all("th")]
    assert not set(HEADLINE_ANSWER_METRICS) & set(headers) and "keyword" not in headers
    assert (
        dom.find("table", id="leaderboard")
        .find("tbody")
        .find_all("tr")[0]
        .find("td", data_metric="span_recall")
        .text()
        == "0.820"
    )
    assert len(dom.find("svg", id="scatter").find_all(class_="point")) == len(BOARD)
    assert not dom.find("svg", id="scatter").find_all("line", class_="whisker")
    assert "No answer metrics on this leaderboard." in dom.text()


def test_removed_and_not_comparable_rows_are_marked_and_a_removed_row_is_never_best():
    rows = board_frame().drop(columns="rank").assign(evaluation_mode="full")  # as build_board makes them
    rows["dataset_sha256"] = ["d1", "d1", "d2", "d1"]
    # two configured rows, one on each dataset: the tie goes to the newer one's, the other is not ranked
    rows["metrics_created_at"] = [NOW - timedelta(hours=h) for h in (1, 1, 5, 1)]
    # recursive-120-20 x top2 (the best span recall and keyword) is no longer configured
    board = rank_board(
        rows, ConfiguredNames(frozenset({"recursive-120-20", "fixed-60-0"}), frozenset({"top4"}))
    )
    board["run_id"] = "board-run"
    dom = parse_dom(render_report(board, pd.DataFrame(), generated_at=NOW))
    body = dom.find("table", id="leaderboard").find("tbody")
    shown = {
        (r.attrs["data-chunk-config"], r.attrs["data-profile"]): (
            r.find("td", data_column="rank").text(),
            r.attrs.get("class", ""),
            r.find_all(data_column="note")[0].text() if r.find_all(data_column="note") else "",
        )
        for r in body.find_all("tr")
    }
    assert shown == {
        ("recursive-120-20", "top4"): ("*", "not-comparable", "other questions: dataset d2 vs d1"),
        ("fixed-60-0", "top4"): ("1", "", ""),
        ("recursive-120-20", "top2"): ("-", "removed", "profile removed"),
        ("fixed-60-0", "top2"): ("-", "removed", "profile removed"),
    }
    removed = body.find("tr", data_chunk_config="recursive-120-20", data_profile="top2")
    assert "best" not in removed.find("td", data_metric="keyword").attrs["class"].split()
    best = dom.find("p", class_="best-line")
    assert [s.text() for s in best.find_all("strong")] == ["fixed-60-0", "top4"]
    assert f"({label(ranked_by(board))} " in best.text()  # "best" by the objective, named
    assert [p.text() for p in dom.find_all("p", class_="footnote")] == footnotes(board)


def test_without_chromium_the_browser_tests_skip_locally_and_fail_in_ci(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(chromium_module.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        chromium_module.chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="chromium is required in CI"):
        chromium_module.chromium()


def test_a_trend_line_breaks_where_the_questions_changed(tmp_path: Path):
    """Issue 30: evaluations on 30, 29 and 8 questions were one line ("falls from 0.74 to 0.19"). The line
    breaks where a run was measured otherwise than the run before it (core/evaluation/comparability.py), marked and
    said under the chart; runs measured alike stay one line."""
    pair = ("fixed-60-0", "top2")
    # (hours ago, run, questions, dataset, mode, question set, mean)
    runs = [
        (4, "on-30", 30, "d1", "full", "set-30", 0.74),
        (3, "on-29", 29, "d2", "full", "set-29", 0.70),
        (2, "quick-a", 8, "d2", "quick", "set-8", 0.19),
        (1, "quick-b", 8, "d2", "quick", "set-8", 0.21),
        (0, "sample-c", 8, "d2", "quick", "set-8c", 0.25),  # another sample of 8
    ]
    w = Warehouse(tmp_path)
    for hours, run, n, dataset, mode, questions, mean in runs:
        row = {
            "run_id": run,
            "evaluation_id": f"eval-{run}",
            "evaluation_mode": mode,
            "created_at": NOW - timedelta(hours=hours),
            "chunk_config": pair[0],
            "profile": pair[1],
            "n_questions": n,
            "dataset_sha256": dataset,
            "question_set": questions,
            **{f"{m}_mean": mean for m in TREND_METRICS},
        }
        w.write_history(
            pd.DataFrame([row]), RETRIEVAL_SUMMARY, {"chunk_config": pair[0], "profile": pair[1]}, run
        )
    history = w.read_history(RETRIEVAL_SUMMARY, (*HISTORY_COLUMNS, *(f"{m}_mean" for m in TREND_METRICS)))
    dom = parse_dom(render_report(board_frame([(*pair, 0.25, 0.3)]), history.frame, generated_at=NOW))
    why = [
        "other questions: 29 vs 30",
        "quick run on 8 questions vs full runs",
        "other question sample: set set-8c vs set-8",
    ]
    for panel in dom.find("svg", id="trends").find_all("g", class_="panel"):
        series = series_of(panel)[pair]
        points = series.find_all(class_="point")
        assert [p.attrs["data-run-id"] for p in points] == [r[1] for r in runs]
        assert [p.attrs.get("data-break", "") for p in points] == ["", *why[:2], "", why[2]]
        assert [b.attrs["data-break"] for b in series.find_all("line", class_="break")] == why
        # one line only: through the two quick runs on the same sample
        (line,) = series.find_all("polyline")
        xs = [float(x.split(",")[0]) for x in line.attrs["points"].split()]
        assert xs == [float(p.attrs["data-cx"]) for p in points[2:4]]
    said = dom.find("p", id="trends-breaks").text()
    assert all(
        f"fixed-60-0 × top2 from {(NOW - timedelta(hours=h)):%Y-%m-%d %H:%M}" in said for h in (3, 2, 0)
    )
    assert all(reason in said for reason in why)
