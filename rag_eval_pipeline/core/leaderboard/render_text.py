"""The leaderboard for the terminal (`rag-eval run`, `rag-eval leaderboard`): the recommendation, then a
plain-text table with the rows' tiers and notes, and their legend."""

from __future__ import annotations

import pandas as pd

from ..evaluation.costs import CONTEXT_TOKENS_MEAN, LATENCY_P95
from ..metrics.traffic import traffic_legend
from ..text_table import format_table
from .board import TERMINAL_ANSWER_METRICS, TERMINAL_METRICS, weighted_column
from .labels import cost_text
from .recommendation import recommend
from .render_table import number
from .view import footnotes, has_notes, profile_label, rank_label, ranked_by, row_note

# The costs beside k, under short headers: the tokens the generator reads, the p95 search latency.
TERMINAL_COSTS = {CONTEXT_TOKENS_MEAN: "context", LATENCY_P95: "p95"}


def format_leaderboard(board: pd.DataFrame) -> str:
    """The recommendation, then the table: the tier, k, the context's tokens and the p95 search latency
    (when measured), the metric ranked by (when it is not a terminal metric) and the mean and bootstrap
    95% CI per terminal retrieval metric, then the answer metrics' means (n/a where answers were not
    evaluated or the judge did not run); a `note` column and a legend under the table when rows are not
    ranked (rank `*`, `x`, `-`) or marked (rank `3*`). When the questions carry traffic counts, the
    objective's traffic-weighted mean follows its column (``<metric> weighted``), and a line under the
    table says which mean is which."""
    answer_columns = [m for m in TERMINAL_ANSWER_METRICS if f"{m}_mean" in board.columns]
    notes = has_notes(board)
    objective = ranked_by(board)
    metrics = [m for m in (objective,) if m not in TERMINAL_METRICS and f"{m}_mean" in board.columns]
    metrics += TERMINAL_METRICS
    tiers = "tier" in board.columns and bool(board["tier"].notna().any())
    costs = [c for c in TERMINAL_COSTS if c in board.columns and board[c].notna().any()]
    header = ["rank", *(["tier"] if tiers else []), "chunk_config", "profile", "k"]
    weighted = weighted_column(board, objective) if objective in metrics else None
    # the weighted mean right after the plain one of the metric ranked by
    after = metrics.index(objective) + 1 if weighted else len(metrics)
    header += [TERMINAL_COSTS[c] for c in costs] + metrics[:after]
    header += [f"{objective} weighted"] if weighted else []
    header += metrics[after:] + answer_columns
    header += ["note"] if notes else []
    rows = []
    for _, row in board.iterrows():
        cells = [rank_label(row), *([tier_label(row)] if tiers else [])]
        cells += [str(row["chunk_config"]), profile_label(row), str(row["top_k"])]
        cells += [cost_text(c, number(row.get(c))) for c in costs]
        cells += [mean_ci(row, metric) for metric in metrics[:after]]
        cells += [weighted_mean(row, weighted)] if weighted else []
        cells += [mean_ci(row, metric) for metric in metrics[after:]]
        for metric in answer_columns:
            value = row[f"{metric}_mean"]
            cells.append("n/a" if pd.isna(value) else f"{value:.3f}")
        cells += [row_note(row)] if notes else []
        rows.append(cells)
    legend = [traffic_legend(objective, f"{objective} weighted")] if weighted else []
    table = format_table(header, rows)
    return "\n".join([format_recommendation(board), "", table, *footnotes(board), *legend])


def format_recommendation(board: pd.DataFrame) -> str:
    """The recommendation (recommendation.py): its headline, then one indented line per detail."""
    recommendation = recommend(board)
    width = max((len(label) for label, _ in recommendation.details), default=0)
    lines = [recommendation.headline]
    lines += [f"  {label + ':':<{width + 1}} {text}" for label, text in recommendation.details]
    return "\n".join(lines)


def tier_label(row: pd.Series) -> str:
    tier = row.get("tier")
    return "" if tier is None or pd.isna(tier) else str(int(tier))


def weighted_mean(row: pd.Series, column: str) -> str:
    value = row.get(column)
    return "n/a" if value is None or pd.isna(value) else f"{value:.3f}"


def mean_ci(row: pd.Series, metric: str) -> str:
    """A terminal cell: the mean and its CI at two decimals, ``0.537 [0.34-0.73]``."""
    mean, low, high = (row[f"{metric}_{part}"] for part in ("mean", "ci_low", "ci_high"))
    return "n/a" if pd.isna(mean) else f"{mean:.3f} [{low:.2f}-{high:.2f}]"
