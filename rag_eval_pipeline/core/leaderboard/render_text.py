"""The leaderboard as a plain-text table for the terminal (`rag-eval run`, `rag-eval leaderboard`), with
the rows' notes and their legend."""

from __future__ import annotations

import pandas as pd

from ..text_table import format_table
from .board import TERMINAL_ANSWER_METRICS, TERMINAL_METRICS
from .ranking import footnotes, has_notes, profile_label, rank_label, row_note


def format_leaderboard(board: pd.DataFrame) -> str:
    """Mean and bootstrap 95% CI per terminal retrieval metric, then the answer metrics' means (n/a
    where answers were not evaluated or the judge did not run); a `note` column and a legend under the
    table when rows are removed (rank `-`) or not comparable (rank `3*`)."""
    answer_columns = [m for m in TERMINAL_ANSWER_METRICS if f"{m}_mean" in board.columns]
    notes = has_notes(board)
    header = ["rank", "chunk_config", "profile", "k", *TERMINAL_METRICS, *answer_columns]
    header += ["note"] if notes else []
    rows = []
    for _, row in board.iterrows():
        cells = [rank_label(row), str(row["chunk_config"]), profile_label(row), str(row["top_k"])]
        cells += [mean_ci(row, metric) for metric in TERMINAL_METRICS]
        for metric in answer_columns:
            value = row[f"{metric}_mean"]
            cells.append("n/a" if pd.isna(value) else f"{value:.3f}")
        cells += [row_note(row)] if notes else []
        rows.append(cells)
    return "\n".join([format_table(header, rows), *footnotes(board)])


def mean_ci(row: pd.Series, metric: str) -> str:
    """A terminal cell: the mean and its CI at two decimals, ``0.537 [0.34-0.73]``."""
    mean, low, high = (row[f"{metric}_{part}"] for part in ("mean", "ci_low", "ci_high"))
    return "n/a" if pd.isna(mean) else f"{mean:.3f} [{low:.2f}-{high:.2f}]"
