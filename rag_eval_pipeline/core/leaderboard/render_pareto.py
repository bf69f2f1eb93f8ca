"""The Pareto front for the terminal (`rag-eval leaderboard --pareto [--cost AXIS]`): the setups worth
choosing between, cheapest first, each with what it buys over the previous one, and every cost of each."""

from __future__ import annotations

import pandas as pd

from ..evaluation.costs import CONTEXT_TOKENS_MEAN, INDEX_BYTES, LATENCY_P50, LATENCY_P95, USD_PER_1K
from ..text_table import format_table
from .labels import cost_text
from .pareto import cost_column, front_rows
from .recommendation import pair, score, tier_of
from .render_table import number
from .view import is_ranked, ranked_by

# Every cost of a setup on the front, in this order, under short headers.
FRONT_COSTS = {
    CONTEXT_TOKENS_MEAN: "context",
    LATENCY_P50: "p50",
    LATENCY_P95: "p95",
    USD_PER_1K: "$/1k q",
    INDEX_BYTES: "index",
}


def format_pareto(board: pd.DataFrame, axis: str) -> str:
    """A heading that says what the front is, then a row per setup on it, cheapest first: its cost on
    ``axis``, the objective's mean and CI, its tier, the setup, what it gains over the previous row for
    what extra cost, and its other costs; a line instead when no ranked row has the cost."""
    metric = ranked_by(board)
    column = cost_column(axis)
    steps = front_rows(board, axis)
    ranked = sum(1 for _, row in board.iterrows() if is_ranked(row))
    if not steps:
        return (
            f"No Pareto front of {metric} against {axis}: no ranked setup has {axis} (metrics written "
            "before it was measured, or nothing ranked): re-evaluate"
        )
    heading = (
        f"Pareto front of {metric} against {axis}: {len(steps)} of {ranked} ranked setups (no other ranked "
        f"setup gives as much {metric} for less {axis}), cheapest first"
    )
    others = [c for c in FRONT_COSTS if c != column]  # every cost but the axis, already the first column
    header = [axis, metric, "tier", "setup", "step up", *(FRONT_COSTS[c] for c in others)]
    rows = []
    for step in steps:
        gain = (
            "cheapest"
            if step.gain is None or step.extra_cost is None
            else f"+{step.gain:.3f} for +{cost_text(column, step.extra_cost)}"
        )
        tier = tier_of(step.row)
        rows.append(
            [
                cost_text(column, step.cost),
                score(step.row, metric),
                "" if tier is None else str(tier),
                pair(step.row),
                gain,
                *(cost_text(c, number(step.row.get(c))) for c in others),
            ]
        )
    return "\n".join([heading, "", format_table(header, rows)])
