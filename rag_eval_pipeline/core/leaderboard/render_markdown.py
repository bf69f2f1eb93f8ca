"""The leaderboard as a markdown table (the leaderboard asset's metadata, shown in the Dagster UI), with
the rows' notes and their legend."""

from __future__ import annotations

import math

import pandas as pd

from ..metrics.names import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS
from ..metrics.traffic import traffic_legend
from ..text_table import markdown_table
from .board import weighted_column
from .labels import cost_text, label
from .recommendation import recommend
from .render_table import number
from .render_text import TERMINAL_COSTS
from .view import footnotes, has_notes, profile_label, rank_label, ranked_by, row_note


def recommendation_markdown(board: pd.DataFrame) -> str:
    """The recommendation (recommendation.py; the asset's ``recommendation`` metadata): the headline in
    bold, then a list of its details."""
    recommendation = recommend(board)
    lines = [f"**{recommendation.headline}**", ""]
    lines += [f"- **{label}**: {text}" for label, text in recommendation.details]
    return "\n".join(lines)


def leaderboard_markdown(board: pd.DataFrame) -> str:
    """The costs some row measured (as the terminal shows them), then every headline metric: retrieval
    as mean and CI, answers as the mean. When the questions carry traffic counts, the objective's
    traffic-weighted mean follows its mean (the objective first when it is no headline metric), with the
    legend every view prints (core/metrics/traffic.py)."""
    notes = has_notes(board)
    costs = [c for c in TERMINAL_COSTS if c in board.columns and board[c].notna().any()]
    objective = ranked_by(board)
    weighted = weighted_column(board, objective) if f"{objective}_mean" in board.columns else None
    retrieval = [objective] if weighted and objective not in HEADLINE_METRICS else []
    retrieval += HEADLINE_METRICS
    after = retrieval.index(objective) + 1 if weighted else len(retrieval)
    weighted_name = f"{objective} weighted"
    header = ["rank", "chunk config", "profile", *(label(c) for c in costs)]
    header += [*retrieval[:after], *([weighted_name] if weighted else []), *retrieval[after:]]
    header += [*HEADLINE_ANSWER_METRICS]
    header += ["note"] if notes else []
    rows = []
    for _, row in board.iterrows():
        cells = [rank_label(row), str(row["chunk_config"]), profile_label(row)]
        cells += [cost_text(c, number(row.get(c))) for c in costs]
        cells += [format_ci(row, m) for m in retrieval[:after]]
        cells += [format_mean(row.get(weighted))] if weighted else []
        cells += [format_ci(row, m) for m in retrieval[after:]]
        cells += [format_mean(row.get(f"{m}_mean")) for m in HEADLINE_ANSWER_METRICS]
        cells += [row_note(row)] if notes else []
        rows.append(cells)
    lines = [markdown_table(header, rows)]
    legend = footnotes(board) + ([traffic_legend(objective, weighted_name)] if weighted else [])
    return "\n".join(lines + ([""] + [f"{line}  " for line in legend] if legend else []))


def format_ci(row: pd.Series, metric: str) -> str:
    """``0.537 [0.344, 0.728]``: the mean and its CI at three decimals."""
    mean, low, high = row[f"{metric}_mean"], row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
    if any(isinstance(v, float) and math.isnan(v) for v in (mean, low, high)):
        return "n/a"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def format_mean(value: object) -> str:
    return "n/a" if not isinstance(value, int | float) or math.isnan(value) else f"{value:.3f}"
