"""The leaderboard report: one self-contained HTML page with the recommendation, the table (scores and
costs), the objective against the context's cost with its Pareto front, a span recall vs precision
scatter of the chunk configs per profile, and metric trends over runs per partition.

Everything is inline (CSS and SVG, no script, no network), so the file opens from disk, from a CI
artifact or a mail attachment alike. Every string that came from a user file is escaped. The same inputs
give the same bytes apart from the generation time.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

import pandas as pd

from ..evaluation.comparability import series_breaks
from ..evaluation.costs import (
    CONTEXT_TOKENS_MEAN,
    COST_BASIS,
    INDEX_BYTES,
    INDEX_USD,
    LATENCY_P50,
    LATENCY_P95,
    USD_PER_1K,
)
from ..judging.summary import JudgingSummary
from ..metrics.names import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS, SPAN_PRECISION, SPAN_RECALL
from ..metrics.traffic import traffic_legend
from ..store.files import write_files_atomically
from ..store.table_upgrades import with_evaluation_defaults
from ..store.warehouse import RETRIEVAL_SUMMARY, ReportPaths, Warehouse
from .board import TREND_METRICS, weighted_column
from .labels import cost_text, label
from .pareto import front_rows, pareto_front
from .recommendation import recommendation_html
from .render_health import health_section
from .render_judging import judging_section
from .render_table import number
from .render_waterfall import waterfall_section
from .view import (
    first_ranked,
    footnotes,
    is_not_comparable,
    is_ranked,
    is_removed,
    rank_label,
    ranked_by,
    row_note,
)

# What the trend chart reads from the history of retrieval_metrics_summary (with TREND_METRICS' means).
HISTORY_COLUMNS = (
    "run_id",
    "created_at",
    "chunk_config",
    "profile",
    "evaluation_id",
    "evaluation_mode",
    "n_questions",
    # what each run was measured on: a line breaks where it changes (core/evaluation/comparability.py)
    "document_scope",
    "dataset_sha256",
    "question_set",
)


@dataclass(frozen=True)
class ReportFiles:
    paths: ReportPaths  # the current report (replaced on every leaderboard) and the run's (kept)
    history_files: int
    problems: tuple[str, ...]


def write_report(
    board: pd.DataFrame,
    warehouse: Warehouse,
    run_id: str,
    *,
    generated_at: datetime | None = None,
    diagnostics: pd.DataFrame | None = None,
    health: Mapping[str, object] | None = None,
    judging: JudgingSummary | None = None,
) -> ReportFiles:
    """Render the report with the trends of the warehouse's retrieval_metrics_summary history (and the
    waterfalls of ``diagnostics``, the partitions' retrieval_diagnostics summaries; the question set's
    ``health``, the question_set_health row; the ``judging`` of real queries) and write it atomically as
    the run's snapshot and as the current report."""
    history = warehouse.read_history(
        RETRIEVAL_SUMMARY, (*HISTORY_COLUMNS, *(f"{m}_mean" for m in TREND_METRICS))
    )
    problems = tuple(f"unreadable history file {u}" for u in history.unreadable)
    html = render_report(
        board,
        history.frame,
        generated_at=generated_at,
        notes=problems,
        diagnostics=diagnostics,
        health=health,
        judging=judging,
    )
    paths = warehouse.report_paths(run_id)
    write_files_atomically(
        [
            (path, lambda tmp: tmp.write_text(html, encoding="utf-8"))
            for path in (paths.current, paths.snapshot)
        ]
    )
    return ReportFiles(paths, history.files, problems)


def render_report(
    board: pd.DataFrame,
    history: pd.DataFrame,
    *,
    generated_at: datetime | None = None,
    notes: Sequence[str] = (),
    diagnostics: pd.DataFrame | None = None,
    health: Mapping[str, object] | None = None,
    judging: JudgingSummary | None = None,
) -> str:
    """One HTML page. ``board`` is the leaderboard table (one row per chunk config x profile, in rank
    order); ``history`` the rows of history/retrieval_metrics_summary (see ``Warehouse.read_history``);
    ``diagnostics`` the partitions' retrieval_diagnostics summaries (core/diagnostics/table.py), drawn
    as waterfalls (None: no such section); ``health`` the question_set_health row
    (core/question_health/report.py), its own section after the table (None: none); ``judging`` the
    workspace's judging of real queries (core/judging/summary.py), its section after that (None: none)."""
    when = (generated_at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    board = board.reset_index(drop=True)
    partitions = [(str(r["chunk_config"]), str(r["profile"])) for _, r in board.iterrows()]
    notes = list(notes)
    trends, trend_notes = trends_svg(history, partitions, TREND_METRICS)
    notes += trend_notes
    run_id = str(board["run_id"].iloc[0]) if "run_id" in board.columns and len(board) else "n/a"
    n_questions = sorted({int(v) for v in board.get("n_questions", pd.Series(dtype="int64")).dropna()})
    facts = [
        f"generated {when}",
        f"leaderboard run <code>{e(run_id)}</code>",
        f"{len(board)} partition{'s' if len(board) != 1 else ''}",
    ]
    if n_questions:
        facts.append(f"{'/'.join(str(n) for n in n_questions)} questions")
    top = first_ranked(board)
    metric = ranked_by(board)  # the objective's metric: what "best" means on this board
    best = (
        f'<p class="best-line">Best: <strong>{e(top["chunk_config"])}</strong> &times; '
        f"<strong>{e(top['profile'])}</strong> ({e(label(metric))} {fmt(top[f'{metric}_mean'])})</p>"
        if top is not None and f"{metric}_mean" in board.columns
        else ""
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>RAG evaluation report</title>",
        f"<style>{CSS}</style></head><body>",
        "<header><h1>RAG evaluation report</h1>",
        f'<p class="meta">{" &middot; ".join(facts)}</p>{best}</header>',
        recommendation_html(board),
        '<section><h2>Leaderboard</h2><p class="hint">Ranked by the objective (above). Retrieval cells: the mean over '
        "the questions and its bootstrap 95% confidence interval; the best value of each column is bold. "
        "Answer cells: means over the questions where the method applied. Hover a row for when it was "
        "evaluated.</p>",
        leaderboard_table(board, HEADLINE_METRICS, HEADLINE_ANSWER_METRICS),
        "</section>",
        health_section(health) if health is not None else "",
        judging_section(judging) if judging is not None else "",
        '<section id="quality-cost"><h2>Quality against cost</h2><p class="hint">One point per ranked setup: '
        f"{e(label(metric))} (the objective) against the context tokens the generator reads per question. "
        "The named points, joined by the line, are the Pareto front: no other setup gives as much for "
        "fewer tokens. Choosing along it is a budget decision. The table lists every setup's costs: "
        "search latency is a question's dense and keyword search, fusion and reranking, measured alone. "
        f"Dollars: {e(cost_basis(board))}.</p>",
        cost_svg(board),
        costs_table(board),
        "</section>",
        '<section><h2>Span recall vs span precision</h2><p class="hint">One point per partition: its colour '
        "is the retrieval profile, its shape the chunk config; the whiskers are the 95% confidence "
        "intervals. Up and to the right is better; the points no other beats on both axes are named (hover "
        "a point for its name and values).</p>",
        scatter_svg(board),
        "</section>",
        '<section><h2>Trends over runs</h2><p class="hint">The mean of each metric per evaluation of a '
        "partition, oldest left, a line per partition evaluated at least twice, broken (a dashed mark) "
        "where a run was measured on other questions, another sample of them or other documents than the "
        "run before it. Filled points are full evaluations; hollow points are quick evaluations on a "
        "sample of the questions.</p>",
        trends,
        "</section>",
    ]
    if diagnostics is not None:  # why each setup misses (render_waterfall.py)
        parts.append(waterfall_section(diagnostics, board))
    if notes:
        parts.append('<section id="notes"><h2>Notes</h2><ul>')
        parts += [f"<li>{e(n)}</li>" for n in notes]
        parts.append("</ul></section>")
    parts.append("<footer>rag_eval_pipeline &middot; data: history/retrieval_metrics_summary</footer>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def cost_basis(board: pd.DataFrame) -> str:
    """What the dollar figures assume (core/evaluation/costs.py), as the board recorded it."""
    if COST_BASIS in board.columns and len(board) and isinstance(board[COST_BASIS].iloc[0], str):
        return str(board[COST_BASIS].iloc[0])
    return "not computed (a board built before the cost columns)"


def e(value: object) -> str:
    return escape(str(value), quote=True)


def fmt(value: object, digits: int = 3) -> str:
    v = number(value)
    return "n/a" if v is None else f"{v:.{digits}f}"


# The costs the leaderboard table shows beside each row's scores (core/evaluation/costs.py), when some row measured
# them; every cost is in the table of the quality-against-cost section.
TABLE_COSTS = (CONTEXT_TOKENS_MEAN, LATENCY_P95)
COSTS_TABLE = (CONTEXT_TOKENS_MEAN, LATENCY_P50, LATENCY_P95, USD_PER_1K, INDEX_BYTES, INDEX_USD)


def leaderboard_table(board: pd.DataFrame, headline: Sequence[str], answers: Sequence[str]) -> str:
    """Rank and tier, the setup, k, the questions (and the mode of a quick run), the context's tokens and
    the p95 search latency, the objective's metric when it is not a headline metric, then each headline
    metric as mean [CI] and the answer means; when each row was evaluated is its tooltip. When the
    questions carry traffic counts, the objective's traffic-weighted mean follows its column, with the
    legend every view prints (core/metrics/traffic.py). Sized to fit 1,600 px without scrolling (it
    scrolls in its own box below that)."""
    objective = ranked_by(board)
    retrieval = [m for m in (objective,) if m not in headline and f"{m}_mean" in board.columns]
    retrieval += [m for m in headline if f"{m}_mean" in board.columns]
    answer = [m for m in answers if f"{m}_mean" in board.columns]
    tiers = "tier" in board.columns and bool(board["tier"].notna().any())
    # the best of each column among the rows that compete: removed ones are no longer a choice
    competing = board[[not is_removed(r) for _, r in board.iterrows()]] if len(board) else board
    best = {
        m: competing[f"{m}_mean"].astype("float64").max()
        for m in (*retrieval, *answer)
        if competing[f"{m}_mean"].notna().any()
    }
    head = ["rank", *(["tier"] if tiers else []), "chunk config", "profile", "k", "questions"]
    costs = [c for c in TABLE_COSTS if c in board.columns and board[c].notna().any()]
    cells = [f'<th scope="col">{e(h)}</th>' for h in head]
    cells += [f'<th scope="col" class="cost" data-cost="{e(c)}">{e(label(c))}</th>' for c in costs]
    weighted = weighted_column(board, objective) if objective in retrieval else None
    # the weighted mean right after the plain one of the metric ranked by
    after = retrieval.index(objective) + 1 if weighted else len(retrieval)
    weighted_name = f"{label(objective)} weighted"
    metric_heads = [
        f'<th scope="col" data-metric="{e(m)}"{" class=objective" if m == objective else ""}>{e(label(m))}</th>'
        for m in retrieval
    ]
    if weighted:
        metric_heads.insert(
            after, f'<th scope="col" class="weighted" data-metric="{e(weighted)}">{e(weighted_name)}</th>'
        )
    cells += metric_heads
    cells += [f'<th scope="col" class="answer" data-metric="{e(m)}">{e(label(m))}</th>' for m in answer]
    rows = [
        f'<div class="table-wrap"><table id="leaderboard"><thead><tr>{"".join(cells)}</tr></thead><tbody>'
    ]
    for _, row in board.iterrows():
        version = str(row.get("profile_version", "") or "")
        competes = not is_removed(row)
        mode = str(row.get("evaluation_mode", "full"))
        tier = row.get("tier")
        tds = [
            f'<td class="num rank" data-column="rank">{e(rank_label(row))}</td>',
            *(
                [
                    f'<td class="num" data-column="tier">{e("" if tier is None or pd.isna(tier) else int(tier))}</td>'
                ]
                if tiers
                else []
            ),
            f'<td class="name" data-column="chunk_config">{e(row["chunk_config"])}</td>',
            f'<td class="name" data-column="profile">{e(row["profile"])}'
            + (
                f' <span class="version">{"v" if version.isdigit() else ""}{e(version)}</span>'
                if version
                else ""
            )
            # what the board cannot vouch for, where the eye is: under the name (view.py)
            + (f'<span class="note" data-column="note">{e(row_note(row))}</span>' if row_note(row) else "")
            + "</td>",
            f'<td class="num">{e(row.get("top_k", ""))}</td>',
            f'<td class="num" data-column="questions">{e(row.get("n_questions", ""))}'
            + (f' <span class="mode-{e(mode)}">{e(mode)}</span>' if mode != "full" else "")
            + "</td>",
        ]
        tds += [
            f'<td class="num cost" data-cost="{e(c)}">{e(cost_text(c, number(row.get(c))))}</td>'
            for c in costs
        ]
        for i, m in enumerate(retrieval, start=1):
            mean = number(row[f"{m}_mean"])
            low, high = number(row.get(f"{m}_ci_low")), number(row.get(f"{m}_ci_high"))
            ci = (
                f'<span class="ci">[{low:.2f}, {high:.2f}]</span>'
                if low is not None and high is not None
                else ""
            )
            strong = (
                ' class="num best"'
                if competes and mean is not None and mean == best.get(m)
                else ' class="num"'
            )
            tds.append(f'<td{strong} data-metric="{e(m)}">{fmt(mean)}{ci}</td>')
            if weighted and i == after:  # the traffic-weighted mean after the objective's
                tds.append(weighted_cell(row, weighted))
        for m in answer:
            mean = number(row[f"{m}_mean"])
            strong = (
                ' class="num best"'
                if competes and mean is not None and mean == best.get(m)
                else ' class="num"'
            )
            tds.append(f'<td{strong} data-metric="{e(m)}">{fmt(mean)}</td>')
        marks = [
            c for c, on in (("removed", is_removed(row)), ("not-comparable", is_not_comparable(row))) if on
        ]
        rank = row.get("rank")
        when = short_time(row.get("metrics_created_at"))
        rows.append(
            f'<tr data-rank="{e("" if rank is None or pd.isna(rank) else rank)}" '
            f'data-chunk-config="{e(row["chunk_config"])}" data-profile="{e(row["profile"])}"'
            + (f' title="evaluated {e(when)} UTC ({e(mode)} run)"' if when else "")
            + (f' class="{" ".join(marks)}"' if marks else "")
            + f">{''.join(tds)}</tr>"
        )
    rows.append("</tbody></table></div>")
    rows += [f'<p class="footnote">{e(line)}</p>' for line in footnotes(board)]
    if weighted:
        rows.append(
            f'<p class="footnote" id="traffic-legend">{e(traffic_legend(label(objective), weighted_name))}</p>'
        )
    if not answer:
        rows.append('<p class="hint">No answer metrics on this leaderboard.</p>')
    return "\n".join(rows)


def weighted_cell(row: pd.Series, column: str) -> str:
    return f'<td class="num weighted" data-metric="{e(column)}">{fmt(row.get(column))}</td>'


def short_time(value: object) -> str:
    stamp = as_utc(value)
    return "" if stamp is None else stamp.strftime("%Y-%m-%d %H:%M")


def as_utc(value: object) -> pd.Timestamp | None:
    if value is None:
        return None
    try:
        stamp = pd.Timestamp(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if pd.isna(stamp):
        return None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


@dataclass(frozen=True)
class Axis:
    low: float
    high: float
    start: float  # pixels
    end: float
    step: float = 0.0  # between ticks; 0: the caller draws its own

    def __call__(self, value: float) -> float:
        span = self.high - self.low
        share = 0.5 if span <= 0 else (value - self.low) / span
        return round(self.start + share * (self.end - self.start), 2)

    def ticks(self) -> list[tuple[float, str]]:
        if self.step <= 0:
            return []
        digits = 2 if abs(self.step * 100 - round(self.step * 100)) < 1e-9 else 3
        count = round((self.high - self.low) / self.step)
        return [
            (self.low + i * self.step, f"{self.low + i * self.step:.{digits}f}") for i in range(count + 1)
        ]


STEPS = (0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25)


def nice_scale(values: Sequence[float], min_width: float = 0.05) -> tuple[float, float, float]:
    """Axis ends and tick step over ``values`` (metrics in [0, 1]): round numbers, at most six steps,
    a little room on both sides, never narrower than ``min_width`` so noise does not look like a trend."""
    if not values:
        return 0.0, 1.0, 0.25
    lo, hi = min(values), max(values)
    if hi - lo < min_width:
        centre = (lo + hi) / 2
        lo, hi = centre - min_width / 2, centre + min_width / 2
    pad = (hi - lo) * 0.08
    lo, hi = max(0.0, lo - pad), min(1.0, hi + pad)
    start, end, step = 0.0, 1.0, STEPS[-1]
    for step in STEPS:
        start = math.floor(lo / step + 1e-9) * step
        end = math.ceil(hi / step - 1e-9) * step
        if (end - start) / step <= 6 + 1e-9:
            break
    return max(0.0, start), min(1.0, end), step


def frame_lines(
    x: Axis, y: Axis, x_label: str, y_label: str, x_ticks: Iterable[tuple[float, str]]
) -> list[str]:
    """Grid, tick labels and axis titles of one plot area."""
    out = ['<g class="axes">']
    for value, text in y.ticks():
        py = y(value)
        out.append(f'<line class="grid" x1="{x.start}" x2="{x.end}" y1="{py}" y2="{py}"/>')
        out.append(f'<text class="tick" x="{x.start - 6}" y="{py + 4}" text-anchor="end">{text}</text>')
    for value, text in x_ticks:
        px = x(value)
        out.append(f'<line class="tickmark" x1="{px}" x2="{px}" y1="{y.start}" y2="{y.start + 5}"/>')
        out.append(f'<text class="tick" x="{px}" y="{y.start + 18}" text-anchor="middle">{e(text)}</text>')
    out.append(f'<line class="axis" x1="{x.start}" x2="{x.end}" y1="{y.start}" y2="{y.start}"/>')
    out.append(f'<line class="axis" x1="{x.start}" x2="{x.start}" y1="{y.start}" y2="{y.end}"/>')
    out.append(
        f'<text class="axis-title" x="{(x.start + x.end) / 2}" y="{y.start + 36}" text-anchor="middle">'
        f"{e(x_label)}</text>"
    )
    mid = (y.start + y.end) / 2
    out.append(
        f'<text class="axis-title" x="{x.start - 46}" y="{mid}" text-anchor="middle" '
        f'transform="rotate(-90 {x.start - 46} {mid})">{e(y_label)}</text>'
    )
    out.append("</g>")
    return out


Box = tuple[float, float, float, float]
# Label boxes are estimated before the browser lays the text out: 11px DejaVu Sans / system-ui averages
# 6 px per character of a config name; 6.8 leaves room for wide letters.
CHAR_WIDTH, LABEL_ASCENT, LABEL_DESCENT = 6.8, 11.0, 3.0


def overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_label(
    text: str, px: float, py: float, taken: list[Box], area: Box
) -> tuple[float, float, str] | None:
    """Where a point's label goes: beside, above, below or diagonal to the point, near first, the first
    spot inside ``area`` that overlaps no box in ``taken`` (points and labels placed so far); None when
    every spot is taken: the point then goes unlabelled rather than under another label."""
    width = CHAR_WIDTH * len(text)
    candidates = []
    for gap in (11.0, 22.0):
        candidates += [
            (px + gap, py + 4, "start"),
            (px - gap, py + 4, "end"),
            (px, py - gap - 1, "middle"),
            (px, py + gap + LABEL_ASCENT, "middle"),
            (px + gap * 0.7, py - gap * 0.7, "start"),
            (px + gap * 0.7, py + gap * 0.7 + LABEL_ASCENT, "start"),
            (px - gap * 0.7, py - gap * 0.7, "end"),
            (px - gap * 0.7, py + gap * 0.7 + LABEL_ASCENT, "end"),
        ]
    for lx, ly, anchor in candidates:
        left = {"start": lx, "end": lx - width, "middle": lx - width / 2}[anchor]
        box = (left, ly - LABEL_ASCENT, left + width, ly + LABEL_DESCENT)
        inside = box[0] >= area[0] and box[2] <= area[2] and box[1] >= area[1] and box[3] <= area[3]
        if inside and not any(overlaps(box, b) for b in taken):
            taken.append(box)
            return round(lx, 2), round(ly, 2), anchor
    return None


# Tableau 10 (distinguishable, colour-blind tolerant) up to ten series; beyond, evenly spaced hues.
TABLEAU_10 = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
# A second cue beside the colour (for colour-blind readers and for many series): the marker's shape.
MARKERS = ("circle", "square", "triangle", "diamond", "triangle-down")


def series_colours(n: int) -> list[str]:
    """``n`` distinct colours: Tableau 10 up to ten; beyond, ``n`` evenly spaced hues, the next series
    far round the wheel from the last and alternately darker and lighter, so no two series share one."""
    if n <= len(TABLEAU_10):
        return list(TABLEAU_10[:n])
    stride = next(s for s in range(n // 3 + 1, n) if math.gcd(s, n) == 1)
    colours = []
    for i in range(n):
        red, green, blue = colorsys.hls_to_rgb((i * stride % n) / n, 0.36 if i % 2 else 0.52, 0.62)
        colours.append(f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}")
    return colours


def marker(shape: str, cx: float, cy: float, r: float, attrs: str, title: str = "") -> str:
    """A point of ``shape`` (one of ``MARKERS``) centred on (cx, cy), with its tooltip."""
    inner = f"<title>{title}</title>" if title else ""
    attrs += f' data-cx="{cx}" data-cy="{cy}"'  # the centre, whatever the shape
    if shape == "circle":
        return f'<circle cx="{cx}" cy="{cy}" r="{r}" {attrs}>{inner}</circle>'
    if shape == "square":
        side = round(r * 1.75, 2)
        return (
            f'<rect x="{round(cx - side / 2, 2)}" y="{round(cy - side / 2, 2)}" width="{side}" '
            f'height="{side}" {attrs}>{inner}</rect>'
        )
    corners = {
        "triangle": ((0, -1.25), (1.1, 0.85), (-1.1, 0.85)),
        "triangle-down": ((0, 1.25), (1.1, -0.85), (-1.1, -0.85)),
        "diamond": ((0, -1.3), (1.3, 0), (0, 1.3), (-1.3, 0)),
    }[shape]
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{round(cx + dx * r, 2)},{round(cy + dy * r, 2)}"
        for i, (dx, dy) in enumerate(corners)
    )
    return f'<path d="{path} Z" {attrs}>{inner}</path>'


@dataclass(frozen=True)
class PlotAxis:
    """What one axis of a point chart shows: the board column of each point's value, the columns of its
    confidence interval (whiskers; None: no interval), and whether it is a score in [0, 1]
    (``nice_scale``) or a cost from 0 up (``count_scale``)."""

    column: str
    title: str
    interval: tuple[str, str] | None
    unit: bool = True

    def value(self, row: pd.Series) -> float | None:
        return number(row.get(self.column))

    def bounds(self, row: pd.Series) -> tuple[float | None, float | None]:
        if self.interval is None:
            return None, None
        return number(row.get(self.interval[0])), number(row.get(self.interval[1]))

    def scale(self, rows: Sequence[pd.Series], start: float, end: float) -> Axis:
        values = [v for r in rows for v in (self.value(r), *self.bounds(r)) if v is not None]
        low, high, step = nice_scale(values) if self.unit else count_scale(values)
        return Axis(low, high, start, end, step)


def count_scale(values: Sequence[float]) -> tuple[float, float, float]:
    """Axis ends and tick step for a cost (tokens, milliseconds, dollars): from 0 to a round number just
    above the largest value, at most six steps of 1, 2, 2.5 or 5 times a power of ten."""
    high = max(values, default=0.0)
    if high <= 0:
        return 0.0, 1.0, 0.25
    magnitude = 10 ** math.floor(math.log10(high / 6))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if high * 1.04 / (m * magnitude) <= 6)
    return 0.0, math.ceil(high * 1.04 / step) * step, step


def point_chart(
    svg_id: str,
    rows: Sequence[pd.Series],
    x: PlotAxis,
    y: PlotAxis,
    front: set[int],
    *,
    staircase: bool = False,
) -> str:
    """One point per row (each with a value on both axes): colour is the profile, shape the chunk config,
    whiskers the confidence intervals. Only the ``front`` (indexes into ``rows``) is named, where its label fits: sixteen labels
    on a few pixels overlap; the shapes and colours name the rest, and every point has a tooltip. With
    ``staircase`` the front is joined, cheapest first, by the steps a reader climbs along it."""
    width, height, left, right, top, bottom = 1000, 500, 66, 250, 16, 52
    xs, ys = x.scale(rows, left, width - right), y.scale(rows, height - bottom, top)
    out = [
        f'<svg id="{e(svg_id)}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{e(y.title)} vs {e(x.title)}">'
    ]
    x_ticks = xs.ticks() if x.unit else [(v, f"{v:,.4g}") for v, _ in xs.ticks()]
    out += frame_lines(xs, ys, x.title, y.title, x_ticks)
    profiles = sorted({str(r["profile"]) for r in rows})
    colours = dict(zip(profiles, series_colours(len(profiles)), strict=True))
    configs = sorted({str(r["chunk_config"]) for r in rows})
    shapes = {c: MARKERS[i % len(MARKERS)] for i, c in enumerate(configs)}
    order = sorted(range(len(rows)), key=lambda i: (str(rows[i]["profile"]), str(rows[i]["chunk_config"])))
    placed = {i: (xs(x.value(rows[i]) or 0.0), ys(y.value(rows[i]) or 0.0)) for i in order}
    if staircase and len(front) > 1:
        steps = sorted(front, key=lambda i: (placed[i][0], -placed[i][1]))
        path = [f"M{placed[steps[0]][0]},{placed[steps[0]][1]}"]
        for i in steps[1:]:
            path.append(f"H{placed[i][0]} V{placed[i][1]}")
        out.append(f'<path class="front-line" d="{" ".join(path)}" fill="none"/>')
    # a marker of radius 6 reaches 7.8 px from its centre (a diamond's corner), and its stroke beyond
    taken: list[Box] = [(px - 9, py - 9, px + 9, py + 9) for px, py in placed.values()]
    area: Box = (left + 2, top, width - right + 10, height - bottom - 2)
    for profile in profiles:
        colour = colours[profile]
        out.append(f'<g class="series" data-profile="{e(profile)}" fill="{colour}" stroke="{colour}">')
        for i in order:
            r = rows[i]
            if str(r["profile"]) != profile:
                continue
            config, (px, py) = str(r["chunk_config"]), placed[i]
            for axis, scale, horizontal in ((x, xs, True), (y, ys, False)):
                low, high = axis.bounds(r)
                if low is None or high is None:
                    continue
                low, high = max(low, scale.low), min(high, scale.high)  # an interval past the axis stops
                if horizontal:
                    out.append(f'<line class="whisker" x1="{xs(low)}" x2="{xs(high)}" y1="{py}" y2="{py}"/>')
                else:
                    out.append(f'<line class="whisker" x1="{px}" x2="{px}" y1="{ys(low)}" y2="{ys(high)}"/>')
            xv, yv = x.value(r) or 0.0, y.value(r) or 0.0
            attrs = (
                f'class="point" data-chunk-config="{e(config)}" data-profile="{e(profile)}" '
                f'data-shape="{shapes[config]}" data-front="{"yes" if i in front else "no"}" '
                f'data-{e(x.column.removesuffix("_mean").replace("_", "-"))}="{xv:.6f}" '
                f'data-{e(y.column.removesuffix("_mean").replace("_", "-"))}="{yv:.6f}"'
            )
            title = f"{e(config)} &times; {e(profile)}: {e(y.title)} {yv:.3f}, {e(x.title)} {xv:,.4g}"
            out.append(marker(shapes[config], px, py, 6, attrs, title))
        out.append("</g>")
    labels: list[str] = []
    for i in sorted(front, key=lambda i: (placed[i][1], -placed[i][0])):  # the highest named first
        config, profile = str(rows[i]["chunk_config"]), str(rows[i]["profile"])
        name = f"{config} × {profile}"
        spot = place_label(name, *placed[i], taken, area)
        if spot is not None:
            lx, ly, anchor = spot
            labels.append(
                f'<text class="point-label" x="{lx}" y="{ly}" text-anchor="{anchor}" '
                f'data-chunk-config="{e(config)}" data-profile="{e(profile)}">{e(name)}</text>'
            )
    out.append('<g class="labels">' + "".join(labels) + "</g>")
    entries = [(p, colours[p], "", "circle") for p in profiles]
    out += legend(width - right + 24, top + 4, entries, "profile (colour)")
    shape_top = top + 4 + 26 + 18 * len(profiles) + 14
    out += legend(
        width - right + 24,
        shape_top,
        [(c, "#616e7c", "", shapes[c]) for c in configs],
        "chunk config (shape)",
    )
    if not rows:
        out.append(
            f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle">no data</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def interval_of(metric: str) -> tuple[str, str]:
    return f"{metric}_ci_low", f"{metric}_ci_high"


def scatter_svg(board: pd.DataFrame) -> str:
    """span_recall_mean (y) against span_precision_mean (x); the front: the points no other beats on both
    axes, among the rows still configured."""
    rows = [r for _, r in board.iterrows()]
    x = PlotAxis(f"{SPAN_PRECISION}_mean", "span precision (mean)", interval_of(SPAN_PRECISION))
    y = PlotAxis(f"{SPAN_RECALL}_mean", "span recall (mean)", interval_of(SPAN_RECALL))
    drawn = [i for i, r in enumerate(rows) if x.value(r) is not None and y.value(r) is not None]
    competing = [i for i in drawn if not is_removed(rows[i])]
    points = [(y.value(rows[i]) or 0.0, x.value(rows[i]) or 0.0) for i in competing]
    front = {drawn.index(competing[i]) for i in pareto_front(points)}
    return point_chart("scatter", [rows[i] for i in drawn], x, y, front)


def cost_svg(board: pd.DataFrame) -> str:
    """The objective (y) against the context's tokens (x), one point per ranked setup: the front (pareto.py)
    named and joined cheapest first."""
    metric = ranked_by(board)
    rows = [r for _, r in board.iterrows() if is_ranked(r)]
    x = PlotAxis(CONTEXT_TOKENS_MEAN, "context tokens per question (mean)", None, unit=False)
    y = PlotAxis(f"{metric}_mean", f"{label(metric)} (mean)", interval_of(metric))
    drawn = [r for r in rows if x.value(r) is not None and y.value(r) is not None]
    on = {(str(s.row["chunk_config"]), str(s.row["profile"])) for s in front_rows(board)}
    front = {i for i, r in enumerate(drawn) if (str(r["chunk_config"]), str(r["profile"])) in on}
    return point_chart("cost-chart", drawn, x, y, front, staircase=True)


def costs_table(board: pd.DataFrame) -> str:
    """Every setup's costs beside its score on the objective, in rank order, the front marked with what
    each of its steps buys over the cheaper one before it."""
    metric = ranked_by(board)
    steps = {(str(s.row["chunk_config"]), str(s.row["profile"])): s for s in front_rows(board)}
    head = ["rank", "setup", label(metric), *(label(c) for c in COSTS_TABLE), "Pareto front"]
    rows = [
        '<div class="table-wrap"><table id="costs"><thead><tr>'
        + "".join(f'<th scope="col">{e(h)}</th>' for h in head)
        + "</tr></thead><tbody>"
    ]
    for _, row in board.iterrows():
        pair = (str(row["chunk_config"]), str(row["profile"]))
        step = steps.get(pair)
        front = (
            ""
            if step is None
            else "yes, the cheapest"
            if step.gain is None or step.extra_cost is None
            else f"yes: +{step.gain:.3f} for +{cost_text(CONTEXT_TOKENS_MEAN, step.extra_cost)} tokens"
        )
        cells = [
            f'<td class="num rank">{e(rank_label(row))}</td>',
            f'<td class="name">{e(pair[0])} &times; {e(pair[1])}</td>',
            f'<td class="num">{fmt(row.get(f"{metric}_mean"))}</td>',
            *(
                f'<td class="num" data-cost="{e(c)}">{e(cost_text(c, number(row.get(c))))}</td>'
                for c in COSTS_TABLE
            ),
            f'<td class="front">{e(front)}</td>',
        ]
        rows.append(
            f'<tr data-chunk-config="{e(pair[0])}" data-profile="{e(pair[1])}" '
            f'data-front="{"yes" if step is not None else "no"}">' + "".join(cells) + "</tr>"
        )
    rows.append("</tbody></table></div>")
    return "\n".join(rows)


def legend(x0: float, y0: float, entries: Sequence[tuple[str, str, str, str]], title: str) -> list[str]:
    """A titled column of entries (name, colour, dash, shape): a line for "line", a marker for a shape,
    a line through a marker for "line-" + shape."""
    out = [f'<g class="legend"><text class="legend-title" x="{x0}" y="{y0 + 8}">{e(title)}</text>']
    for i, (name, colour, dash, shape) in enumerate(entries):
        cy = y0 + 26 + 18 * i
        if shape.startswith("line"):
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(
                f'<line x1="{x0}" x2="{x0 + 18}" y1="{cy - 4}" y2="{cy - 4}" stroke="{colour}" '
                f'stroke-width="2.5"{dashed}/>'
            )
        shown = shape.removeprefix("line").removeprefix("-")
        if shown:
            out.append(marker(shown, x0 + 9, cy - 4, 4.5, f'fill="{colour}" stroke="#fff" stroke-width="1"'))
        out.append(f'<text class="legend-entry" x="{x0 + 24}" y="{cy}">{e(name)}</text>')
    out.append("</g>")
    return out


def trends_svg(
    history: pd.DataFrame, partitions: Sequence[tuple[str, str]], metrics: Sequence[str]
) -> tuple[str, list[str]]:
    """One panel per metric; in each, a line per partition of the board evaluated at least twice (board
    order), through a point per evaluation. A partition with one evaluation has no trend yet: it is
    named under the chart, not drawn as a lone dot. Returns the HTML and notes on what was not drawn."""
    notes: list[str] = []
    frame = history.copy()
    for column in ("chunk_config", "profile", "created_at", "run_id"):
        if column not in frame.columns:
            frame[column] = None
    frame = with_evaluation_defaults(frame)  # rows from before evaluation modes were full evaluations
    frame["chunk_config"] = frame["chunk_config"].astype("object").map(str)
    frame["profile"] = frame["profile"].astype("object").map(str)
    frame["when"] = [as_utc(v) for v in frame["created_at"]]
    undated = frame["when"].isna()
    if undated.any():
        notes.append(f"{int(undated.sum())} history rows have no created_at and are not plotted")
    frame = frame[~undated]
    wanted = set(partitions)
    keys = list(zip(frame["chunk_config"], frame["profile"], strict=True))
    others = sorted({k for k in keys if k not in wanted})
    if others:
        notes.append(
            "history of partitions not on this leaderboard, not plotted: "
            + ", ".join(f"{c} x {p}" for c, p in others)
        )
    frame = frame[pd.Series([k in wanted for k in keys], index=frame.index, dtype=bool)]
    frame = frame.assign(_order=frame["when"].map(lambda t: t.value)).sort_values(
        ["_order", "run_id"], kind="stable"
    )
    counts = frame.groupby(["chunk_config", "profile"]).size().to_dict()
    missing = [p for p in partitions if not counts.get(p)]
    if missing:
        notes.append("no history yet for: " + ", ".join(f"{c} x {p}" for c, p in missing))
    drawn = [p for p in partitions if counts.get(p, 0) >= 2]
    once = [f"{c} × {p}" for c, p in partitions if counts.get((c, p)) == 1]
    single = (
        f'<p class="hint" id="trends-single">Evaluated once so far, so not drawn: {e(", ".join(once))}.</p>'
        if once
        else ""
    )
    if not drawn:
        return (
            '<p class="empty" id="trends-empty">No partition has been evaluated twice yet: a partition\'s '
            "trend appears with its second evaluation.</p>" + single,
            notes,
        )
    frame = frame[
        pd.Series(
            [k in set(drawn) for k in zip(frame["chunk_config"], frame["profile"], strict=True)],
            index=frame.index,
            dtype=bool,
        )
    ]
    width, panel_height, left, right, top, bottom, gap = 1040, 230, 66, 290, 16, 48, 22
    style = {
        p: (colour, MARKERS[i % len(MARKERS)])
        for i, (p, colour) in enumerate(zip(drawn, series_colours(len(drawn)), strict=True))
    }
    # how each run differs from its partition's run before it: the line breaks there
    frame = frame.assign(_break="")
    for _, runs in frame.groupby(["chunk_config", "profile"], sort=False):
        frame.loc[runs.index, "_break"] = series_breaks(runs)
    times = [t.value for t in frame["when"]]
    t_low, t_high = float(min(times)), float(max(times))
    if t_high == t_low:  # evaluations at one instant: a day either side
        t_low, t_high = t_low - 86_400e9, t_high + 86_400e9
    pad = (t_high - t_low) * 0.03  # no point on the y axis
    x = Axis(t_low - pad, t_high + pad, left, width - right)
    x_ticks, x_title = time_ticks(t_low - pad, t_high + pad)
    total_height = len(metrics) * (panel_height + gap)
    out = [
        f'<svg id="trends" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_height}" '
        f'width="{width}" height="{total_height}" role="img" aria-label="metric trends over runs">'
    ]
    for index, metric in enumerate(metrics):
        column = f"{metric}_mean"
        values = frame[column].map(number) if column in frame.columns else pd.Series(None, index=frame.index)
        present = [v for v in values if v is not None]
        lo, hi, step = nice_scale(present)
        y0 = index * (panel_height + gap)
        y = Axis(lo, hi, y0 + panel_height - bottom, y0 + top, step)
        out.append(f'<g class="panel" data-metric="{e(metric)}">')
        out.append(f'<text class="panel-title" x="{left}" y="{y0 + 10}">{e(label(metric))}</text>')
        out += frame_lines(x, y, x_title, "mean", x_ticks)
        for chunk_config, profile in drawn:
            colour, shape = style[(chunk_config, profile)]
            mask = (frame["chunk_config"] == chunk_config) & (frame["profile"] == profile)
            points: list[tuple[float, float, float, str, str, pd.Timestamp, str]] = []
            pending = ""  # a break at a run without a value breaks the line at the next one
            for w, v, run, mode, why in zip(
                frame.loc[mask, "when"],
                values[mask],
                frame.loc[mask, "run_id"],
                frame.loc[mask, "evaluation_mode"],
                frame.loc[mask, "_break"],
                strict=True,
            ):
                pending = str(why) or pending
                if v is None:
                    continue
                points.append((x(float(w.value)), y(v), v, str(run), str(mode), w, pending if points else ""))
                pending = ""
            if not points:
                continue
            out.append(
                f'<g class="series" data-chunk-config="{e(chunk_config)}" data-profile="{e(profile)}" '
                f'data-metric="{e(metric)}" data-shape="{shape}" stroke="{colour}">'
            )
            segments: list[list[tuple[float, float]]] = [[]]
            for px, py, *_, why in points:
                if why:
                    segments.append([])
                    out.append(
                        f'<line class="break" data-break="{e(why)}" x1="{px}" x2="{px}" y1="{y.start}" '
                        f'y2="{y.end}">'
                        f"<title>{e(chunk_config)} &times; {e(profile)}: a new line, {e(why)}</title></line>"
                    )
                segments[-1].append((px, py))
            for index_of_segment, segment in enumerate(segments):
                if len(segment) > 1:
                    path = " ".join(f"{px},{py}" for px, py in segment)
                    out.append(
                        f'<polyline class="line" data-segment="{index_of_segment}" points="{path}" fill="none"/>'
                    )
            for px, py, v, run, mode, when, why in points:
                fill = "#fff" if mode == "quick" else colour
                attrs = (
                    f'class="point" fill="{fill}" data-run-id="{e(run)}" data-mode="{e(mode)}" '
                    f'data-value="{v:.6f}"' + (f' data-break="{e(why)}"' if why else "")
                )
                title = (
                    f"{e(chunk_config)} &times; {e(profile)}, {e(when.strftime('%Y-%m-%d %H:%M'))} "
                    f"({e(mode)}): {e(label(metric))} {v:.3f}" + (f"; a new line, {e(why)}" if why else "")
                )
                out.append(marker(shape, px, py, 4, attrs, title))
            out.append("</g>")
        if not present:
            out.append(
                f'<text class="empty" x="{(x.start + x.end) / 2}" y="{(y.start + y.end) / 2}" '
                'text-anchor="middle">no history</text>'
            )
        out.append("</g>")
    entries = [(f"{c} × {p}", style[(c, p)][0], "", f"line-{style[(c, p)][1]}") for c, p in drawn]
    out += legend(width - right + 44, top, entries, "chunk config × profile")
    out.append("</svg>")
    return "\n".join(out) + breaks_hint(frame) + single, notes


def breaks_hint(frame: pd.DataFrame) -> str:
    """The sentence under the chart naming every break of a line: where and why ("" without one)."""
    broken = frame[frame["_break"] != ""]
    if broken.empty:
        return ""
    said = "; ".join(
        f"{c} × {p} from {when.strftime('%Y-%m-%d %H:%M')}: {why}"
        for c, p, when, why in zip(
            broken["chunk_config"], broken["profile"], broken["when"], broken["_break"], strict=True
        )
    )
    return (
        '<p class="hint" id="trends-breaks">A line breaks (dashed mark) where a run was not measured like '
        f"the run before it, so its means do not continue the line: {e(said)}.</p>"
    )


SECOND = 10**9  # nanoseconds, as pandas counts them
# Tick steps of the time axis in seconds, so ticks fall on round times (the minute, the hour, midnight UTC).
TIME_STEPS = (1, 5, 30, 60, 300, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400, 2 * 86_400, 7 * 86_400)


def time_ticks(low: float, high: float, most: int = 6) -> tuple[list[tuple[float, str]], str]:
    """Ticks (nanoseconds) at round times between ``low`` and ``high``, at most ``most``, each label
    distinct, and the axis title. The date is said once: in the title when every tick falls on one day
    (the ticks then show the time), the year in the title when steps are whole days."""
    days_apart = math.ceil((high - low) / (most - 1) / (86_400 * SECOND))  # a long history: whole days
    step = SECOND * next(
        (s for s in TIME_STEPS if (high - low) / (s * SECOND) <= most - 1), days_apart * 86_400
    )
    first = math.ceil(low / step) * step
    values = [float(first + i * step) for i in range(int((high - first) // step) + 1)] or [(low + high) / 2]
    stamps = [pd.Timestamp(int(value), tz="UTC") for value in values]
    days = {stamp.date() for stamp in stamps}
    if len(days) == 1:
        pattern = "%H:%M:%S" if step < 60 * SECOND else "%H:%M"
        title = f"evaluated at (UTC, {stamps[0]:%Y-%m-%d})"
    elif step >= 86_400 * SECOND:
        years = {stamp.year for stamp in stamps}
        pattern = "%b %d" if len(years) == 1 else "%Y-%m-%d"
        title = f"evaluated on (UTC, {stamps[0].year})" if len(years) == 1 else "evaluated on (UTC)"
    else:
        pattern, title = "%b %d %H:%M", "evaluated at (UTC)"
    ticks: list[tuple[float, str]] = []
    for value, stamp in zip(values, stamps, strict=True):
        text = stamp.strftime(pattern)
        if text not in {t for _, t in ticks}:  # never the same label twice
            ticks.append((value, text))
    return ticks, title


CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #d9e2ec; --band: #f5f7fa; --accent: #2f6fb0; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto,
  "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: #fff; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 30px 0 4px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.meta, .hint, footer { color: var(--muted); }
.hint { margin: 4px 0 12px; max-width: 70em; }
.best-line { margin: 6px 0 0; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; background: var(--band); }
th.answer { background: #eef4ea; }
tbody tr:nth-child(even) { background: #fbfcfd; }
tbody tr:hover { background: #eef4fb; }
td.num { text-align: right; white-space: nowrap; }
td.best { font-weight: 700; }
td.name { font-weight: 500; white-space: nowrap; }
td.when { color: var(--muted); min-width: 6em; }
.mode-quick { color: #b35c00; font-size: 11px; }
th.objective { background: #e8f0fa; }
th.weighted { background: #f1f6fc; }
tr.removed td { color: var(--muted); font-style: italic; }
tr.not-comparable td.rank, .note { color: #8a4b00; }
td .note { display: block; min-width: 16em; white-space: normal; font-size: 11px; font-style: normal; }
p.footnote { margin: 6px 0 0; color: #8a4b00; font-size: 12px; }
.table-wrap { overflow-x: auto; max-width: 100%; }
.ci { display: block; font-size: 11px; color: var(--muted); font-weight: 400; }
.version { font-size: 11px; color: var(--muted); }
svg { display: block; max-width: 100%; height: auto; overflow: visible; }
svg text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: var(--ink); }
.grid { stroke: #eef1f4; }
.axis, .tickmark { stroke: #9aa5b1; }
svg text.tick { fill: var(--muted); }
svg text.axis-title { fill: var(--muted); font-size: 12px; }
svg text.panel-title { font-weight: 600; font-size: 13px; }
svg text.legend-title { font-weight: 600; }
svg text.empty { fill: var(--muted); font-size: 13px; }
.whisker { stroke-width: 1.2; stroke-opacity: 0.45; }
.series .point { stroke: #fff; stroke-width: 1.5; }
#trends .series .point { stroke: inherit; stroke-width: 1.5; }
#trends .line { stroke-width: 2; }
#trends .break { stroke: #8a4b00; stroke-width: 1.2; stroke-dasharray: 3 3; }
svg text.point-label { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
#notes li { color: #8a4b00; }
.front-line { stroke: #9aa5b1; stroke-width: 1.5; stroke-dasharray: 4 3; }
th.cost { background: #f3eef7; }
#costs { margin-top: 10px; }
td.front { white-space: nowrap; }
p.empty { color: var(--muted); font-style: italic; }
#health-warnings li { color: #8a4b00; margin: 2px 0; }
#health-warnings.ok { color: var(--muted); }
#health-measures tr.warned td { color: #8a4b00; font-weight: 600; }
#judging-stale li { color: #8a4b00; margin: 2px 0; }
h3 { font-size: 14px; margin: 18px 0 4px; }
footer { margin-top: 36px; font-size: 12px; }
"""
