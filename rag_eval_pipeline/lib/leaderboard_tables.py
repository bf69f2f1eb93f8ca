"""The leaderboard as tables: plain text for the terminal (`rag-eval run`, `rag-eval leaderboard`) and
markdown for the leaderboard asset's metadata, each with the rows' notes and their legend. Plain pandas
over core/leaderboard.py's ranking, kept in one place until the leaderboard has one owner in the core."""

from __future__ import annotations

import math

import pandas as pd

from ..core.leaderboard import footnotes, has_notes, rank_label, row_note
from ..core.text_table import format_table

# The columns a leaderboard reader looks at first; every metric is in the tables.
HEADLINE_METRICS = ("span_recall", "span_precision", "span_iou", "recall_at_k", "mrr", "ndcg_at_k")
HEADLINE_ANSWER_METRICS = ("keyword", "semantic_dynamic", "hybrid", "llm_judge")
# What the terminal's table shows.
LEADERBOARD_COLUMNS = ("span_recall", "span_precision", "span_iou", "recall_at_k", "mrr")
ANSWER_COLUMNS = ("keyword", "semantic_dynamic", "llm_judge")


def format_leaderboard(board: pd.DataFrame) -> str:
    """A plain-text table: mean and bootstrap 95% CI per headline retrieval metric, then the answer
    metrics' means (n/a where answers were not evaluated or the judge did not run); a `note` column and
    a legend under the table when rows are removed (rank `-`) or not comparable (rank `3*`)."""
    answer_columns = [m for m in ANSWER_COLUMNS if f"{m}_mean" in board.columns]
    notes = has_notes(board)
    header = ["rank", "chunk_config", "profile", "k", *LEADERBOARD_COLUMNS, *answer_columns]
    header += ["note"] if notes else []
    rows = []
    for _, row in board.iterrows():
        cells = [rank_label(row), str(row["chunk_config"]), profile_label(row), str(row["top_k"])]
        cells += [mean_ci(row, metric) for metric in LEADERBOARD_COLUMNS]
        for metric in answer_columns:
            value = row[f"{metric}_mean"]
            cells.append("n/a" if pd.isna(value) else f"{value:.3f}")
        cells += [row_note(row)] if notes else []
        rows.append(cells)
    return "\n".join([format_table(header, rows), *footnotes(board)])


def mean_ci(row: pd.Series, metric: str) -> str:
    mean, low, high = (row[f"{metric}_{part}"] for part in ("mean", "ci_low", "ci_high"))
    return "n/a" if pd.isna(mean) else f"{mean:.3f} [{low:.2f}-{high:.2f}]"


def format_ci(row: pd.Series, metric: str) -> str:
    mean, low, high = row[f"{metric}_mean"], row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
    if any(isinstance(v, float) and math.isnan(v) for v in (mean, low, high)):
        return "n/a"
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def leaderboard_markdown(board: pd.DataFrame) -> str:
    """The board as a markdown table (the asset's metadata), with the rows' notes and their legend."""
    notes = has_notes(board)
    header = ["rank", "chunk config", "profile", *HEADLINE_METRICS, *HEADLINE_ANSWER_METRICS]
    header += ["note"] if notes else []
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for _, row in board.iterrows():
        cells = [rank_label(row), str(row["chunk_config"]), profile_label(row)]
        cells += [format_ci(row, m) for m in HEADLINE_METRICS]
        cells += [format_mean(row.get(f"{m}_mean")) for m in HEADLINE_ANSWER_METRICS]
        cells += [row_note(row)] if notes else []
        lines.append("| " + " | ".join(cells) + " |")
    legend = footnotes(board)
    return "\n".join(lines + ([""] + [f"{line}  " for line in legend] if legend else []))


def profile_label(row: pd.Series) -> str:
    """The profile, marked when its current metrics come from a quick run (a sample of the questions)."""
    quick = row.get("evaluation_mode") == "quick"
    return f"{row['profile']} (quick, {row['n_questions']} questions)" if quick else str(row["profile"])


def format_mean(value: object) -> str:
    return "n/a" if not isinstance(value, int | float) or math.isnan(value) else f"{value:.3f}"
