"""The leaderboard report: one self-contained HTML page with the table, a span recall vs precision
scatter of the chunk configs per profile, and metric trends over runs per partition.

Everything is inline (CSS and SVG, no script, no network), so the file opens from disk, from a CI
artifact or a mail attachment alike. Every string that came from a user file is escaped. The same inputs
give the same bytes apart from the generation time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

import pandas as pd

from ..files import write_files_atomically
from ..warehouse import RETRIEVAL_SUMMARY, ReportPaths, Warehouse, with_evaluation_defaults
from .board import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS, TREND_METRICS
from .ranking import first_ranked, footnotes, is_not_comparable, is_removed, rank_label, row_note

LABELS = {
    "span_recall": "span recall",
    "span_precision": "span precision",
    "span_iou": "span IoU",
    "recall_at_k": "recall@k",
    "hit_at_k": "hit@k",
    "mrr": "MRR",
    "ndcg_at_k": "nDCG@k",
    "keyword": "keyword",
    "semantic_dynamic": "semantic (fitted)",
    "semantic_fixed": "semantic (fixed)",
    "hybrid": "hybrid",
    "llm_judge": "LLM judge",
}

# Tableau 10: distinguishable, colour-blind tolerant; dashes tell apart series that share a colour.
PALETTE = (
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
DASHES = ("", "6 3", "2 3", "8 3 2 3")

# What the trend chart reads from the history of retrieval_metrics_summary (with TREND_METRICS' means).
HISTORY_COLUMNS = (
    "run_id",
    "created_at",
    "chunk_config",
    "profile",
    "evaluation_id",
    "evaluation_mode",
    "n_questions",
)


def label(metric: str) -> str:
    return LABELS.get(metric, metric.replace("_", " "))


@dataclass(frozen=True)
class ReportFiles:
    paths: ReportPaths  # the current report (replaced on every leaderboard) and the run's (kept)
    history_files: int
    problems: tuple[str, ...]


def write_report(
    board: pd.DataFrame, warehouse: Warehouse, run_id: str, *, generated_at: datetime | None = None
) -> ReportFiles:
    """Render the report with the trends of the warehouse's retrieval_metrics_summary history and write
    it atomically as the run's snapshot and as the current report."""
    history = warehouse.read_history(
        RETRIEVAL_SUMMARY, (*HISTORY_COLUMNS, *(f"{m}_mean" for m in TREND_METRICS))
    )
    problems = tuple(f"unreadable history file {u}" for u in history.unreadable)
    html = render_report(board, history.frame, generated_at=generated_at, notes=problems)
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
) -> str:
    """One HTML page. ``board`` is the leaderboard table (one row per chunk config x profile, in rank
    order); ``history`` the rows of history/retrieval_metrics_summary (see ``Warehouse.read_history``)."""
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
    best = (
        f'<p class="best-line">Best: <strong>{e(top["chunk_config"])}</strong> &times; '
        f"<strong>{e(top['profile'])}</strong> (span IoU {fmt(top['span_iou_mean'])})</p>"
        if top is not None and "span_iou_mean" in board.columns
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
        '<section><h2>Leaderboard</h2><p class="hint">Ranked by span IoU. Retrieval cells: the mean over '
        "the questions and its bootstrap 95% confidence interval; the best value of each column is bold. "
        "Answer cells: means over the questions where the method applied.</p>",
        leaderboard_table(board, HEADLINE_METRICS, HEADLINE_ANSWER_METRICS),
        "</section>",
        '<section><h2>Span recall vs span precision</h2><p class="hint">One point per chunk config, one '
        "colour per retrieval profile; the whiskers are the 95% confidence intervals. Up and to the right "
        "is better.</p>",
        scatter_svg(board),
        "</section>",
        '<section><h2>Trends over runs</h2><p class="hint">The mean of each metric per evaluation of a '
        "partition, oldest left. Filled points are full evaluations (joined by a line); hollow points are "
        "quick evaluations on a sample of the questions.</p>",
        trends,
        "</section>",
    ]
    if notes:
        parts.append('<section id="notes"><h2>Notes</h2><ul>')
        parts += [f"<li>{e(n)}</li>" for n in notes]
        parts.append("</ul></section>")
    parts.append("<footer>rag_eval_pipeline &middot; data: history/retrieval_metrics_summary</footer>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def e(value: object) -> str:
    return escape(str(value), quote=True)


def number(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        result = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(result) else result


def fmt(value: object, digits: int = 3) -> str:
    v = number(value)
    return "n/a" if v is None else f"{v:.{digits}f}"


def leaderboard_table(board: pd.DataFrame, headline: Sequence[str], answers: Sequence[str]) -> str:
    retrieval = [m for m in headline if f"{m}_mean" in board.columns]
    answer = [m for m in answers if f"{m}_mean" in board.columns]
    has_mode = "evaluation_mode" in board.columns
    # the best of each column among the rows that compete: removed ones are no longer a choice
    competing = board[[not is_removed(r) for _, r in board.iterrows()]] if len(board) else board
    best = {
        m: competing[f"{m}_mean"].astype("float64").max()
        for m in (*retrieval, *answer)
        if competing[f"{m}_mean"].notna().any()
    }
    head = ["rank", "chunk config", "profile", "k", "questions"]
    if has_mode:
        head.append("mode")
    cells = [f'<th scope="col">{e(h)}</th>' for h in head]
    cells += [f'<th scope="col" data-metric="{e(m)}">{e(label(m))}</th>' for m in retrieval]
    cells += [f'<th scope="col" class="answer" data-metric="{e(m)}">{e(label(m))}</th>' for m in answer]
    cells.append('<th scope="col">evaluated</th>')
    rows = [
        f'<div class="table-wrap"><table id="leaderboard"><thead><tr>{"".join(cells)}</tr></thead><tbody>'
    ]
    for _, row in board.iterrows():
        version = str(row.get("profile_version", "") or "")
        competes = not is_removed(row)
        tds = [
            f'<td class="num rank" data-column="rank">{e(rank_label(row))}</td>',
            f'<td class="name" data-column="chunk_config">{e(row["chunk_config"])}</td>',
            f'<td class="name" data-column="profile">{e(row["profile"])}'
            + (
                f' <span class="version">{"v" if version.isdigit() else ""}{e(version)}</span>'
                if version
                else ""
            )
            # what the board cannot vouch for, where the eye is: under the name (ranking.py)
            + (f'<span class="note" data-column="note">{e(row_note(row))}</span>' if row_note(row) else "")
            + "</td>",
            f'<td class="num">{e(row.get("top_k", ""))}</td>',
            f'<td class="num">{e(row.get("n_questions", ""))}</td>',
        ]
        if has_mode:
            mode = str(row["evaluation_mode"])
            tds.append(f'<td class="mode-{e(mode)}">{e(mode)}</td>')
        for m in retrieval:
            mean = number(row[f"{m}_mean"])
            low, high = number(row.get(f"{m}_ci_low")), number(row.get(f"{m}_ci_high"))
            ci = (
                f'<span class="ci">[{low:.3f}, {high:.3f}]</span>'
                if low is not None and high is not None
                else ""
            )
            strong = (
                ' class="num best"'
                if competes and mean is not None and mean == best.get(m)
                else ' class="num"'
            )
            tds.append(f'<td{strong} data-metric="{e(m)}">{fmt(mean)}{ci}</td>')
        for m in answer:
            mean = number(row[f"{m}_mean"])
            strong = (
                ' class="num best"'
                if competes and mean is not None and mean == best.get(m)
                else ' class="num"'
            )
            tds.append(f'<td{strong} data-metric="{e(m)}">{fmt(mean)}</td>')
        tds.append(f'<td class="when">{e(short_time(row.get("metrics_created_at")))}</td>')
        marks = [
            c for c, on in (("removed", is_removed(row)), ("not-comparable", is_not_comparable(row))) if on
        ]
        rank = row.get("rank")
        rows.append(
            f'<tr data-rank="{e("" if rank is None or pd.isna(rank) else rank)}" '
            f'data-chunk-config="{e(row["chunk_config"])}" data-profile="{e(row["profile"])}"'
            + (f' class="{" ".join(marks)}"' if marks else "")
            + f">{''.join(tds)}</tr>"
        )
    rows.append("</tbody></table></div>")
    rows += [f'<p class="footnote">{e(line)}</p>' for line in footnotes(board)]
    if not answer:
        rows.append('<p class="hint">No answer metrics on this leaderboard.</p>')
    return "\n".join(rows)


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


def place_label(text: str, px: float, py: float, taken: list[Box], area: Box) -> tuple[float, float, str]:
    """Where a point's label goes: right, left, above or below the point, the first spot that overlaps
    no other label or point and stays in the plot; else stacked below on the right."""
    width = 6.3 * len(text)
    candidates = [
        (px + 9, py + 4, "start", (px + 9, py - 8, px + 9 + width, py + 4)),
        (px - 9, py + 4, "end", (px - 9 - width, py - 8, px - 9, py + 4)),
        (px, py - 10, "middle", (px - width / 2, py - 22, px + width / 2, py - 10)),
        (px, py + 19, "middle", (px - width / 2, py + 7, px + width / 2, py + 19)),
    ]

    def free(box: Box) -> bool:
        inside = box[0] >= area[0] and box[2] <= area[2] and box[1] >= area[1] and box[3] <= area[3]
        return inside and not any(
            box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken
        )

    for lx, ly, anchor, box in candidates:
        if free(box):
            taken.append(box)
            return lx, ly, anchor
    lx, ly = px + 9, py + 4
    while not free((lx, ly - 12, lx + width, ly)) and ly < area[3] + 200:
        ly += 12
    taken.append((lx, ly - 12, lx + width, ly))
    return lx, ly, "start"


def scatter_svg(board: pd.DataFrame) -> str:
    """span_recall_mean (y) against span_precision_mean (x), a series (colour) per profile, each point
    labelled with its chunk config; the whiskers are the confidence intervals."""
    width, height, left, right, top, bottom = 820, 460, 66, 190, 16, 52
    rows = [
        r
        for _, r in board.iterrows()
        if number(r.get("span_recall_mean")) is not None and number(r.get("span_precision_mean")) is not None
    ]

    def scale(metric: str) -> tuple[float, float, float]:
        values = [
            v
            for r in rows
            for v in (number(r.get(f"{metric}_{s}")) for s in ("mean", "ci_low", "ci_high"))
            if v is not None
        ]
        return nice_scale(values)

    x = Axis(*scale("span_precision")[:2], left, width - right, scale("span_precision")[2])
    y = Axis(*scale("span_recall")[:2], height - bottom, top, scale("span_recall")[2])
    out = [
        f'<svg id="scatter" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="span recall vs span precision">'
    ]
    out += frame_lines(x, y, "span precision (mean)", "span recall (mean)", x.ticks())
    profiles = sorted({str(r["profile"]) for r in rows})
    colours = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(profiles)}
    points = []
    for profile in profiles:
        for r in sorted(
            (r for r in rows if str(r["profile"]) == profile), key=lambda r: str(r["chunk_config"])
        ):
            recall, precision = float(r["span_recall_mean"]), float(r["span_precision_mean"])
            points.append((profile, r, recall, precision, x(precision), y(recall)))
    taken: list[Box] = [(px - 6, py - 6, px + 6, py + 6) for *_, px, py in points]
    area: Box = (left, top, width - right + 10, height - bottom)
    labels: list[str] = []
    for profile in profiles:
        colour = colours[profile]
        out.append(f'<g class="series" data-profile="{e(profile)}" fill="{colour}" stroke="{colour}">')
        for _, r, recall, precision, px, py in (p for p in points if p[0] == profile):
            for metric, horizontal in (("span_precision", True), ("span_recall", False)):
                low, high = number(r.get(f"{metric}_ci_low")), number(r.get(f"{metric}_ci_high"))
                if low is None or high is None:
                    continue
                if horizontal:
                    out.append(f'<line class="whisker" x1="{x(low)}" x2="{x(high)}" y1="{py}" y2="{py}"/>')
                else:
                    out.append(f'<line class="whisker" x1="{px}" x2="{px}" y1="{y(low)}" y2="{y(high)}"/>')
            name = str(r["chunk_config"])
            out.append(
                f'<circle class="point" cx="{px}" cy="{py}" r="6" data-chunk-config="{e(name)}" '
                f'data-profile="{e(profile)}" data-span-recall="{recall:.6f}" '
                f'data-span-precision="{precision:.6f}"><title>{e(name)} &times; {e(profile)}: span recall '
                f"{recall:.3f}, span precision {precision:.3f}</title></circle>"
            )
            lx, ly, anchor = place_label(name, px, py, taken, area)
            labels.append(
                f'<text class="point-label" x="{lx}" y="{ly}" text-anchor="{anchor}">{e(name)}</text>'
            )
        out.append("</g>")
    out.append('<g class="labels">' + "".join(labels) + "</g>")
    out += legend(width - right + 24, top + 4, [(p, colours[p], "", "circle") for p in profiles], "profile")
    if not rows:
        out.append(
            f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle">no data</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def legend(x0: float, y0: float, entries: Sequence[tuple[str, str, str, str]], title: str) -> list[str]:
    out = [f'<g class="legend"><text class="legend-title" x="{x0}" y="{y0 + 8}">{e(title)}</text>']
    for i, (name, colour, dash, shape) in enumerate(entries):
        cy = y0 + 26 + 18 * i
        if shape == "circle":
            out.append(f'<circle cx="{x0 + 7}" cy="{cy - 4}" r="5" fill="{colour}"/>')
        else:
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(
                f'<line x1="{x0}" x2="{x0 + 18}" y1="{cy - 4}" y2="{cy - 4}" stroke="{colour}" '
                f'stroke-width="2.5"{dashed}/>'
            )
        out.append(f'<text class="legend-entry" x="{x0 + 24}" y="{cy}">{e(name)}</text>')
    out.append("</g>")
    return out


def trends_svg(
    history: pd.DataFrame, partitions: Sequence[tuple[str, str]], metrics: Sequence[str]
) -> tuple[str, list[str]]:
    """One panel per metric; in each, one series per partition of the board (board order), a point per
    evaluation. Returns the SVG and notes on what was not drawn and why."""
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
    missing = [
        p for p in partitions if not ((frame["chunk_config"] == p[0]) & (frame["profile"] == p[1])).any()
    ]
    if missing:
        notes.append("no history yet for: " + ", ".join(f"{c} x {p}" for c, p in missing))
    width, panel_height, left, right, top, bottom, gap = 880, 220, 66, 250, 16, 48, 20
    style = {
        p: (PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)])
        for i, p in enumerate(partitions)
    }
    times = [t.value for t in frame["when"]]
    t_low, t_high = (min(times), max(times)) if times else (0, 0)
    if t_high == t_low:  # one evaluation: a single point in the middle
        t_low, t_high = t_low - 86_400 * 10**9, t_high + 86_400 * 10**9
    x = Axis(float(t_low), float(t_high), left, width - right)
    total_height = len(metrics) * (panel_height + gap)
    out = [
        f'<svg id="trends" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_height}" '
        f'width="{width}" height="{total_height}" role="img" aria-label="metric trends over runs">'
    ]
    x_ticks = time_ticks(frame["when"].tolist(), float(t_low), float(t_high))
    for index, metric in enumerate(metrics):
        column = f"{metric}_mean"
        values = frame[column].map(number) if column in frame.columns else pd.Series(None, index=frame.index)
        present = [v for v in values if v is not None]
        lo, hi, step = nice_scale(present)
        y0 = index * (panel_height + gap)
        y = Axis(lo, hi, y0 + panel_height - bottom, y0 + top, step)
        out.append(f'<g class="panel" data-metric="{e(metric)}">')
        out.append(f'<text class="panel-title" x="{left}" y="{y0 + 10}">{e(label(metric))}</text>')
        out += frame_lines(x, y, "evaluated at (UTC)", "mean", x_ticks)
        for chunk_config, profile in partitions:
            colour, dash = style[(chunk_config, profile)]
            mask = (frame["chunk_config"] == chunk_config) & (frame["profile"] == profile)
            points = [
                (x(float(w.value)), y(v), v, str(run), str(mode), w)
                for w, v, run, mode in zip(
                    frame.loc[mask, "when"],
                    values[mask],
                    frame.loc[mask, "run_id"],
                    frame.loc[mask, "evaluation_mode"],
                    strict=True,
                )
                if v is not None
            ]
            if not points:
                continue
            out.append(
                f'<g class="series" data-chunk-config="{e(chunk_config)}" data-profile="{e(profile)}" '
                f'data-metric="{e(metric)}" stroke="{colour}">'
            )
            full = [(px, py) for px, py, _, _, mode, _ in points if mode != "quick"]
            if len(full) > 1:
                dashed = f' stroke-dasharray="{dash}"' if dash else ""
                path = " ".join(f"{px},{py}" for px, py in full)
                out.append(f'<polyline class="line" points="{path}" fill="none"{dashed}/>')
            for px, py, v, run, mode, when in points:
                fill = "#fff" if mode == "quick" else colour
                out.append(
                    f'<circle class="point" cx="{px}" cy="{py}" r="4" fill="{fill}" data-run-id="{e(run)}" '
                    f'data-mode="{e(mode)}" data-value="{v:.6f}"><title>{e(chunk_config)} &times; '
                    f"{e(profile)}, {e(when.strftime('%Y-%m-%d %H:%M'))} ({e(mode)}): {e(label(metric))} "
                    f"{v:.3f}</title></circle>"
                )
            out.append("</g>")
        if not present:
            out.append(
                f'<text class="empty" x="{(x.start + x.end) / 2}" y="{(y.start + y.end) / 2}" '
                'text-anchor="middle">no history</text>'
            )
        out.append("</g>")
    entries = [(f"{c} × {p}", *style[(c, p)], "line") for c, p in partitions]
    out += legend(width - right + 16, top, entries, "chunk config × profile")
    out.append("</svg>")
    return "\n".join(out), notes


def time_ticks(stamps: Sequence[Any], low: float, high: float) -> list[tuple[float, str]]:
    """Four evenly spaced dates (with the time when the runs lie within two days)."""
    if not stamps:
        return []
    days = (high - low) / 86_400e9
    pattern = "%Y-%m-%d" if days > 4 else "%m-%d %H:%M"
    return [
        (value, pd.Timestamp(int(value), tz="UTC").strftime(pattern))
        for value in (low + (high - low) * i / 3 for i in range(4))
    ]


CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #d9e2ec; --band: #f5f7fa; --accent: #2f6fb0; }
* { box-sizing: border-box; }
body { margin: 0; padding: 28px 36px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto,
  "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: #fff; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 30px 0 4px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.meta, .hint, footer { color: var(--muted); }
.hint { margin: 4px 0 12px; max-width: 70em; }
.best-line { margin: 6px 0 0; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; background: var(--band); white-space: nowrap; }
th.answer { background: #eef4ea; }
tbody tr:nth-child(even) { background: #fbfcfd; }
tbody tr:hover { background: #eef4fb; }
td.num { text-align: right; white-space: nowrap; }
td.best { font-weight: 700; }
td.name { font-weight: 500; white-space: nowrap; }
td.when { color: var(--muted); white-space: nowrap; }
td.mode-quick { color: #b35c00; }
tr.removed td { color: var(--muted); font-style: italic; }
tr.not-comparable td.rank, .note { color: #8a4b00; }
td .note { display: block; min-width: 16em; white-space: normal; font-size: 11px; font-style: normal; }
p.footnote { margin: 6px 0 0; color: #8a4b00; font-size: 12px; }
.table-wrap { overflow-x: auto; }
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
svg text.point-label { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
#notes li { color: #8a4b00; }
footer { margin-top: 36px; font-size: 12px; }
"""
