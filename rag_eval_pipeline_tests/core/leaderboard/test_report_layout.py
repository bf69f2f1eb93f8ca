"""The report as a person reads it at 1,280 and 1,600 px, laid out by headless Chromium and measured in
the browser: no horizontal scroll of the page (the table scrolls in its own box when it must), no
text of a chart over another text or a point label over a point, trends only for partitions evaluated
at least twice, a colour per line and no tick label twice. Screenshots are taken to look at."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rag_eval_pipeline.core.leaderboard.board import TREND_METRICS
from rag_eval_pipeline.core.leaderboard.render_html import render_report
from rag_eval_pipeline_tests.chromium import page_measurements, parse_dom, png_size, screenshot
from rag_eval_pipeline_tests.core.leaderboard.test_render_html import board_frame

pytestmark = pytest.mark.slow  # Chromium

NOW = datetime(2026, 11, 27, 22, 5, tzinfo=UTC)
CONFIGS = ("fixed-200-0", "recursive-400-50", "recursive-800-100", "token-cl100k-200", "semantic-p95")
PROFILES = ("dense-top5", "dense-top10", "hybrid-top5", "keyword-top5")
WIDTHS = (1280, 1600)

# Boxes of every text and point of the two charts, the page's and the table's widths, and what the
# trends drew (in the browser, so the fonts and the layout are the real ones).
MEASURE = """
const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const chart = (id) => {
  const svg = document.getElementById(id);
  if (!svg) return null;
  return {
    texts: [...svg.querySelectorAll('text')].map((t) => ({
      cls: t.getAttribute('class') || '', text: t.textContent, box: box(t),
      panel: t.closest('.panel') ? t.closest('.panel').dataset.metric : '',
    })),
    points: [...svg.querySelectorAll('.point')].map((p) => ({
      pair: [p.dataset.chunkConfig || p.parentNode.dataset.chunkConfig, p.dataset.profile || p.parentNode.dataset.profile],
      box: box(p),
    })),
    series: [...svg.querySelectorAll('g.series')].map((g) => ({
      metric: g.dataset.metric || '', pair: [g.dataset.chunkConfig || '', g.dataset.profile],
      stroke: g.getAttribute('stroke'), shape: g.dataset.shape || '',
      points: g.querySelectorAll('.point').length,
      line: g.querySelector('polyline') ? g.querySelector('polyline').getAttribute('points').trim().split(/\\s+/).length : 0,
    })),
  };
};
const wrap = document.querySelector('.table-wrap');
return {
  viewport: window.innerWidth,
  page: document.documentElement.scrollWidth,
  wrap: {right: wrap.getBoundingClientRect().right, client: wrap.clientWidth, scroll: wrap.scrollWidth,
         overflow: getComputedStyle(wrap).overflowX},
  scatter: chart('scatter'),
  cost: chart('cost-chart'),
  costs: document.getElementById('costs').closest('.table-wrap').getBoundingClientRect().right,
  trends: chart('trends'),
};
"""


def board_of_twenty() -> pd.DataFrame:
    """Five chunk configs x four profiles, with the clusters a real board has: the recall of a profile
    barely moves with the chunk config, so points crowd a corner."""
    rows = []
    for i, config in enumerate(CONFIGS):
        for j, profile in enumerate(PROFILES):
            recall = 0.70 + 0.045 * j + 0.012 * i
            precision = 0.021 + 0.022 * (4 - i) / (1 + j) + 0.003 * j
            rows.append((config, profile, round(recall, 4), round(precision, 4)))
    rows.sort(key=lambda r: -r[2] * r[3])
    board = board_frame(rows)
    # the context shrinks as the scores do (smaller chunks): a front of several setups, as on real boards
    board["context_tokens_mean"] = [
        1000.0 - 160 * CONFIGS.index(c) + 40 * PROFILES.index(p)
        for c, p in zip(board["chunk_config"], board["profile"], strict=True)
    ]
    return board


def history(evaluations: dict[tuple[str, str], int]) -> pd.DataFrame:
    """Summary rows: evaluation ``j`` of every partition a day after the one before, the partitions of
    one evaluation 40 s apart (one run evaluates them in turn), all measured alike (full mode, the same
    85 questions), so each partition's points make one line (a change of questions or mode breaks it:
    test_render_html and faults/test_trend_faults)."""
    rows = []
    for k, ((config, profile), count) in enumerate(evaluations.items()):
        for j in range(count):
            rows.append(
                {
                    "run_id": f"run-{k}-{j}",
                    "created_at": NOW - timedelta(days=count - 1 - j, seconds=40 * (20 - k)),
                    "chunk_config": config,
                    "profile": profile,
                    "n_questions": 85,
                    "evaluation_id": f"eval-{j}",
                    "evaluation_mode": "full",
                    **{
                        f"{m}_mean": 0.3 + 0.02 * ((k * 7 + j * 3 + i) % 11)
                        for i, m in enumerate(TREND_METRICS)
                    },
                }
            )
    return pd.DataFrame(rows)


def overlap(a: list[float], b: list[float], tolerance: float = 0.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > tolerance and min(a[3], b[3]) - max(a[1], b[1]) > tolerance


def collisions(chart: dict[str, Any]) -> list[tuple[str, str]]:
    """Pairs of texts of a chart whose boxes overlap, and point labels over a point."""
    texts = [t for t in chart["texts"] if t["text"].strip()]
    found = [
        (a["text"], b["text"]) for a, b in itertools.combinations(texts, 2) if overlap(a["box"], b["box"])
    ]
    labels = [t for t in texts if t["cls"] == "point-label"]
    found += [
        (t["text"], f"point {p['pair']}")
        for t in labels
        for p in chart["points"]
        if overlap(t["box"], p["box"])
    ]
    return found


def check_page(measured: dict[str, Any], width: int) -> None:
    assert measured["viewport"] == width
    assert measured["page"] <= width, f"the page scrolls sideways at {width} px: {measured['page']} px wide"
    wrap = measured["wrap"]
    assert wrap["right"] <= width  # the table's box stays in the window
    if wrap["scroll"] > wrap["client"]:  # a table wider than its box scrolls inside it
        assert wrap["overflow"] in ("auto", "scroll")
    if width >= 1600:
        assert wrap["scroll"] <= wrap["client"], "the table should fit at 1,600 px"
    scatter = measured["scatter"]
    assert len(scatter["points"]) == 20
    assert collisions(scatter) == []
    assert 1 <= sum(t["cls"] == "point-label" for t in scatter["texts"]) < 20  # the front, not every point
    cost = measured["cost"]  # quality against cost: every ranked setup, its front named where it fits
    assert len(cost["points"]) == 20 and collisions(cost) == []
    assert 2 <= sum(t["cls"] == "point-label" for t in cost["texts"]) < 20
    assert measured["costs"] <= width  # the table of every setup's costs stays in the window


def look(page: Path, tmp_path: Path, width: int) -> None:
    png = screenshot(page, tmp_path / f"{page.stem}-{width}.png", tmp_path, width, 2400)
    assert png_size(png) == (width, 2400)


def test_after_one_evaluation_the_report_says_trends_need_a_second(tmp_path: Path) -> None:
    board = board_of_twenty()
    pairs = list(zip(board["chunk_config"], board["profile"], strict=True))
    page = tmp_path / "first.html"
    page.write_text(
        render_report(board, history(dict.fromkeys(pairs, 1)), generated_at=NOW), encoding="utf-8"
    )
    dom = parse_dom(page.read_text(encoding="utf-8"))
    assert not dom.find_all("svg", id="trends")  # no lone dots
    assert "evaluated twice" in dom.find("p", id="trends-empty").text()
    assert all(f"{c} × {p}" in dom.find("p", id="trends-single").text() for c, p in pairs)
    for width in WIDTHS:
        measured = page_measurements(page, tmp_path, width, MEASURE)
        check_page(measured, width)
        assert measured["trends"] is None
        look(page, tmp_path, width)


def test_trends_draw_a_line_per_partition_evaluated_twice_in_its_own_colour(tmp_path: Path) -> None:
    board = board_of_twenty()
    pairs = list(zip(board["chunk_config"], board["profile"], strict=True))
    counts = {pair: (2, 3, 4, 1)[k % 4] for k, pair in enumerate(pairs)}  # five evaluated once
    page = tmp_path / "later.html"
    page.write_text(render_report(board, history(counts), generated_at=NOW), encoding="utf-8")
    drawn = [pair for pair in pairs if counts[pair] >= 2]
    for width in WIDTHS:
        measured = page_measurements(page, tmp_path, width, MEASURE)
        check_page(measured, width)
        trends = measured["trends"]
        for metric in TREND_METRICS:
            series = [s for s in trends["series"] if s["metric"] == metric]
            assert [tuple(s["pair"]) for s in series] == drawn  # board order, none evaluated once
            assert all(s["points"] == s["line"] == counts[tuple(s["pair"])] for s in series)  # one line each
            assert len({s["stroke"] for s in series}) == len(drawn) == 15  # no colour twice
            ticks = [t["text"] for t in trends["texts"] if t["cls"] == "tick" and t["panel"] == metric]
            assert len(ticks) == len(set(ticks)), ticks  # no tick label twice (values nor dates)
        assert collisions(trends) == []
        look(page, tmp_path, width)
