"""The leaderboard as rows of typed cells: the table the Dagster UI shows inline on the ``leaderboard``
asset (its ``leaderboard`` metadata, built by lib/metric_metadata.py), where a markdown table hid behind
a modal taller than the screen.

The UI prints each cell as it is, so every number is already as a reader compares it: four significant
digits (core/significant_digits.py), a retrieval metric as its mean with the bootstrap 95% CI as text
(``0.812 [0.77, 0.85]``), an answer metric as a rounded number. A missing value is ``None`` (an empty
cell), never NaN, which the UI cannot parse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Literal

import pandas as pd

from ..evaluation.costs import CONTEXT_TOKENS_MEAN, INDEX_BYTES, LATENCY_P95, USD_PER_1K
from ..metrics.names import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS
from ..metrics.traffic import traffic_legend
from ..significant_digits import significant, significant_text
from .board import weighted_column
from .labels import label
from .pareto import ON_FRONT
from .view import has_notes, rank_label, ranked_by, row_note

Cell = str | int | float | None
CellType = Literal["string", "int", "float"]

RANK_HELP = (
    "1 is the best; N* ranked, its answer columns not comparable; * not ranked (not comparable), "
    "x not ranked (outside the objective's constraint), - removed (the footnotes say why)"
)
METRIC_HELP = "mean over the questions [bootstrap 95% CI], four significant digits"
ANSWER_HELP = "mean over the questions where the method applied, four significant digits"


@dataclass(frozen=True)
class Column:
    name: str  # the header the UI shows, and each row's key
    type: CellType
    description: str


@dataclass(frozen=True)
class BoardTable:
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]  # in rank order, a cell per column

    def records(self) -> list[dict[str, Cell]]:
        return [dict(zip((c.name for c in self.columns), row, strict=True)) for row in self.rows]


# The costs (core/evaluation/costs.py) a row shows beside its scores, when some row measured them.
COST_HELP = {
    CONTEXT_TOKENS_MEAN: "cl100k tokens of the k retrieved chunks, mean over the questions: what the generator reads",
    LATENCY_P95: "95th percentile of the questions' search latency (dense and keyword search, fusion, rerank)",
    USD_PER_1K: "dollars per 1,000 questions: the generator reading the context, query embedding and rewriting",
    INDEX_BYTES: "bytes of the profile's indexes: float32 vectors plus the BM25 folder",
}


def board_table(board: pd.DataFrame) -> BoardTable:
    """Rank (and tier), the pair, k, questions and mode; the costs some row measured (and whether the row
    is on the Pareto front of the objective against context tokens); the metric ranked by when it is not
    a headline metric, every headline retrieval metric as mean [CI] (after the ranking metric, its
    traffic-weighted mean when the questions carry counts); the answer metrics that have a value on some
    row; the note when a row has one."""
    objective = ranked_by(board)
    retrieval = [m for m in (objective,) if m not in HEADLINE_METRICS and f"{m}_mean" in board.columns]
    retrieval += [m for m in HEADLINE_METRICS if f"{m}_mean" in board.columns]
    answers = [
        m
        for m in HEADLINE_ANSWER_METRICS
        if f"{m}_mean" in board.columns and board[f"{m}_mean"].notna().any()
    ]
    tiers = "tier" in board.columns
    modes = "evaluation_mode" in board.columns
    notes = has_notes(board)
    costs = [c for c in COST_HELP if c in board.columns and board[c].notna().any()]
    front = ON_FRONT in board.columns and bool(board[ON_FRONT].notna().any())
    weighted = weighted_column(board, objective) if objective in retrieval else None
    after = retrieval.index(objective) + 1 if weighted else len(retrieval)
    weighted_help = traffic_legend(label(objective), f"{label(objective)} weighted")
    columns = [
        Column("rank", "string", RANK_HELP),
        *([Column("tier", "int", "statistical tier: 1 cannot be told apart from the best")] if tiers else []),
        Column("chunk config", "string", "the chunk config (data/chunk_configs.yaml)"),
        Column("profile", "string", "the retrieval profile (data/retrieval_profiles.yaml)"),
        Column("k", "int", "chunks retrieved per question"),
        Column("questions", "int", "questions evaluated"),
        *([Column("mode", "string", "full, or quick (a sample of the questions)")] if modes else []),
        *(Column(label(c), "float", f"{COST_HELP[c]}; four significant digits") for c in costs),
        *([Column("Pareto front", "string", FRONT_HELP)] if front else []),
        *(
            Column(label(m), "string", f"{METRIC_HELP}{'; the ranking metric' if m == objective else ''}")
            for m in retrieval[:after]
        ),
        *([Column(f"{label(objective)} weighted", "float", weighted_help)] if weighted else []),
        *(Column(label(m), "string", METRIC_HELP) for m in retrieval[after:]),
        *(Column(label(m), "float", ANSWER_HELP) for m in answers),
        *([Column("note", "string", "why the row is marked or not ranked")] if notes else []),
    ]
    rows = []
    for _, row in board.iterrows():
        cells: list[Cell] = [rank_label(row)]
        cells += [whole(row.get("tier"))] if tiers else []
        cells += [str(row["chunk_config"]), str(row["profile"]), whole(row.get("top_k"))]
        cells += [whole(row.get("n_questions"))]
        cells += [str(row["evaluation_mode"])] if modes else []
        cells += [rounded(row.get(c)) for c in costs]
        cells += [front_label(row.get(ON_FRONT))] if front else []
        cells += [mean_ci_text(row, m) for m in retrieval[:after]]
        cells += [rounded(row.get(weighted))] if weighted else []
        cells += [mean_ci_text(row, m) for m in retrieval[after:]]
        cells += [rounded(row.get(f"{m}_mean")) for m in answers]
        cells += [row_note(row)] if notes else []
        rows.append(tuple(cells))
    return BoardTable(tuple(columns), tuple(rows))


FRONT_HELP = (
    "yes: no other ranked setup gives as much of the ranking metric with fewer context tokens "
    "(`rag-eval leaderboard --pareto`)"
)


def front_label(value: object) -> str | None:
    """``yes``/``no`` on the ranked rows, an empty cell on the others."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return "yes" if bool(value) else "no"


def mean_ci_text(row: pd.Series, metric: str) -> str:
    """``0.812 [0.77, 0.85]``: the mean and its CI at four significant digits; the mean alone when the
    CI is unknown; ``n/a`` without a mean."""
    mean = number(row.get(f"{metric}_mean"))
    if mean is None:
        return "n/a"
    low, high = number(row.get(f"{metric}_ci_low")), number(row.get(f"{metric}_ci_high"))
    interval = "" if low is None or high is None else f" [{significant_text(low)}, {significant_text(high)}]"
    return significant_text(mean) + interval


def number(value: object) -> float | None:
    """A float (numpy's numbers too), or None for a missing value (None, NaN, pandas' NA, text)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    found = float(value)
    return None if math.isnan(found) else found


def rounded(value: object) -> float | None:
    found = number(value)
    return None if found is None else significant(found)


def whole(value: object) -> int | None:
    found = number(value)
    return None if found is None else int(found)
