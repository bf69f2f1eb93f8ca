"""The Pareto front of quality against cost: the setups no other setup beats on both.

A setup is on the front when no other ranked setup scores at least as high on the objective AND costs at
most as much, better on one of the two. Everything off the front is dominated: some setup gives as much
quality for less, or more for the same. The front is what a reader chooses from; where along it is a
budget decision the leaderboard cannot make, so it lists the front cheapest first with what each step up
buys. Only ranked rows compete (comparable, configured, within the objective's constraints): a row
measured on other questions cannot dominate, nor be dominated.

The cost axis is one of ``core.evaluation.costs.COST_AXES`` (by default ``context_tokens``, the generator's cost per
question, known for every setup and free of price assumptions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..errors import ConfigError
from ..evaluation.costs import COST_AXES
from ..metrics.names import CONTEXT_TOKENS
from .view import is_ranked, ranked_by

DEFAULT_COST_AXIS = CONTEXT_TOKENS
# The board column that marks the front on the default axis (every view shows it).
ON_FRONT = "pareto_front"


def pareto_front(points: Sequence[tuple[float, ...]]) -> set[int]:
    """The indexes of the points no other point beats: at least as high on every value and higher on one
    (every value higher-is-better: negate a cost). Equal points are all on the front."""
    return {
        i
        for i, a in enumerate(points)
        if not any(
            all(x >= y for x, y in zip(b, a, strict=True)) and any(x > y for x, y in zip(b, a, strict=True))
            for b in points
        )
    }


def cost_column(axis: str) -> str:
    """The board column of a cost axis (``context_tokens`` -> ``context_tokens_mean``)."""
    if axis not in COST_AXES:
        raise ConfigError(f"unknown cost axis {axis!r}; one of {', '.join(COST_AXES)}")
    return COST_AXES[axis]


@dataclass(frozen=True)
class FrontStep:
    """A setup on the front, and what it buys over the next cheaper one on the front (None for the
    cheapest)."""

    row: pd.Series
    quality: float
    cost: float
    gain: float | None
    extra_cost: float | None


def front_rows(board: pd.DataFrame, axis: str = DEFAULT_COST_AXIS) -> list[FrontStep]:
    """The ranked rows on the front of the objective (``ranked_by``) against ``axis``, cheapest first
    (ties by quality, best first, then by name); rows without a cost or a score on it are left out."""
    column, metric = cost_column(axis), f"{ranked_by(board)}_mean"
    rows = [
        row
        for _, row in board.iterrows()
        if is_ranked(row) and _known(row.get(column)) and _known(row.get(metric))
    ]
    points = [(float(r[metric]), -float(r[column])) for r in rows]
    front = sorted(
        (rows[i] for i in pareto_front(points)),
        key=lambda r: (float(r[column]), -float(r[metric]), str(r["chunk_config"]), str(r["profile"])),
    )
    steps: list[FrontStep] = []
    for row in front:
        quality, cost = float(row[metric]), float(row[column])
        previous = steps[-1] if steps else None
        steps.append(
            FrontStep(
                row,
                quality,
                cost,
                quality - previous.quality if previous else None,
                cost - previous.cost if previous else None,
            )
        )
    return steps


def front_names(board: pd.DataFrame, axis: str = DEFAULT_COST_AXIS) -> str:
    """The setups on the front, cheapest first (``fixed-200-0 x dense-top5, ...``), or ``none`` (the
    leaderboard asset's ``pareto_front`` metadata)."""
    names = [f"{s.row['chunk_config']} x {s.row['profile']}" for s in front_rows(board, axis)]
    return ", ".join(names) or "none"


def mark_front(board: pd.DataFrame) -> pd.DataFrame:
    """``board`` with ``pareto_front``: True on the rows of the front on the default axis, False on the
    other ranked rows, unknown (<NA>) on the rows that do not compete or whose cost is not known."""
    frame = board.copy()
    on = {(str(s.row["chunk_config"]), str(s.row["profile"])) for s in front_rows(frame)}
    column = cost_column(DEFAULT_COST_AXIS)
    frame[ON_FRONT] = pd.array(
        [
            ((str(r["chunk_config"]), str(r["profile"])) in on)
            if is_ranked(r) and _known(r.get(column))
            else None
            for _, r in frame.iterrows()
        ],
        dtype="boolean",
    )
    return frame


def _known(value: object) -> bool:
    return value is not None and not pd.isna(value)  # type: ignore[call-overload]
