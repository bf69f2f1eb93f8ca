"""Statistical tiers: which setups the questions cannot tell apart from the best one.

A leaderboard of 16 setups whose confidence intervals overlap ranks noise: the order of the 2nd and the
5th may flip on another sample of questions. Tier 1 is the best setup and every setup not significantly
worse than it, so a reader picks among the tied setups on other grounds (cost, latency, simplicity).

The test, per challenger c against the best b, on the questions both were evaluated on (paired by
question id, so the per-question difficulty cancels out):

    d_i = x_b,i - x_c,i          T = |sum_i d_i|          (the mean difference, times n)
    p = #{s in S : |sum_i s_i d_i| >= T} / |S|

over sign vectors s in {-1, +1}^n: a two-sided paired sign-flip permutation test. Under the null
hypothesis that the two setups are exchangeable on each question, every sign of d_i is equally likely.
S is all 2^n vectors when 2^n <= ``n_permutations`` (exact), else ``n_permutations`` vectors drawn with a
fixed seed, counting the observed one: p = (1 + hits) / (1 + n_permutations) (never 0). Why this test:
it tests the mean, the very statistic the board ranks by (a Wilcoxon signed-rank test tests a location
of the differences and can disagree with the order of the means); it assumes no distribution, which
matters for bounded, zero-heavy values such as span recall; and with a fixed seed it gives the same p
run after run. Two-sided, because "the best" was picked after seeing the data.

The m = (number of challengers) p-values are corrected with Holm's step-down method (the family-wise
error stays below alpha, uniformly more powerful than Bonferroni): sorted ascending p_(1) <= ... <= p_(m),

    p~_(j) = max_{i <= j} min(1, (m - i + 1) * p_(i))

and a challenger whose adjusted p~ > alpha is tied with the best: same tier. The next tier is built the
same way from the setups left: the best of them and every setup not significantly worse than it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

TEST_NAME = "paired sign-flip permutation test, two-sided"
N_PERMUTATIONS = 10_000
SEED = 0
Correction = Literal["holm", "none"]
# Bounds the sign matrix (permutations x questions) held in memory at once.
_MAX_BATCH_CELLS = 2_000_000


@dataclass(frozen=True)
class TierVerdict:
    """One setup's tier, and the corrected p-value of its comparison with its tier's best (NaN for the
    best of a tier: it was compared with nothing); ``n_paired`` the questions that comparison used."""

    tier: int
    p_value: float
    n_paired: int


def statistical_tiers(
    values: Sequence[pd.Series],
    alpha: float = 0.05,
    *,
    correction: Correction = "holm",
    n_permutations: int = N_PERMUTATIONS,
    seed: int = SEED,
) -> list[TierVerdict]:
    """Tiers of setups from their per-question values.

    Args:
        values: one Series per setup, indexed by question id, in rank order (best first): the first setup
            left is its tier's best. A question without a value in both setups of a pair is left out of
            that pair.
        alpha: the family-wise significance level of each tier's comparisons.
        correction: ``holm`` (the default), or ``none`` to see what the correction changes.
        n_permutations: sign vectors drawn when exact enumeration would need more.
        seed: of the drawn sign vectors: the same values give the same tiers.

    Returns:
        One ``TierVerdict`` per setup, in the order of ``values``.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    table = pd.concat([v.rename(i) for i, v in enumerate(values)], axis=1, join="outer") if values else None
    verdicts: dict[int, TierVerdict] = {}
    left = list(range(len(values)))
    tier = 1
    while left and table is not None:
        best, challengers = left[0], left[1:]
        verdicts[best] = TierVerdict(tier, math.nan, int(table[best].notna().sum()))
        for c, (p, n) in zip(
            challengers,
            compare_with_best(table, best, challengers, correction, n_permutations, seed),
            strict=True,
        ):
            if p > alpha:
                verdicts[c] = TierVerdict(tier, p, n)
        left = [c for c in challengers if c not in verdicts]
        tier += 1
    return [verdicts[i] for i in range(len(values))]


def compare_with_best(
    table: pd.DataFrame,
    best: object,
    challengers: Sequence[object],
    correction: Correction = "holm",
    n_permutations: int = N_PERMUTATIONS,
    seed: int = SEED,
) -> list[tuple[float, int]]:
    """Per challenger (a column of ``table``: questions x setups, NaN where a setup has no value), the
    corrected p-value of its paired test against the ``best`` column and the number of questions paired:
    one step of the tiers, and of the search's racing (core/search/race.py)."""
    paired = table[list(challengers)].notna() & table[[best]].notna().to_numpy()
    differences = (table[[best]].to_numpy() - table[list(challengers)].to_numpy()) * paired.to_numpy()
    raw = sign_flip_p_values(np.nan_to_num(differences), n_permutations, seed)
    adjusted = holm_adjusted(raw) if correction == "holm" else raw
    return [(p, int(n)) for p, n in zip(adjusted, paired.sum().to_numpy(), strict=True)]


def sign_flip_p_values(
    differences: npt.NDArray[np.float64], n_permutations: int = N_PERMUTATIONS, seed: int = SEED
) -> list[float]:
    """Per column of ``differences`` (questions x comparisons, 0 where a question is not paired), the
    two-sided sign-flip permutation p-value of its sum; a column without a difference has p = 1.

    A column with at most log2(n_permutations) non-zero differences is enumerated exactly (a zero flips
    to itself); the others share ``n_permutations`` sign vectors drawn with ``seed`` for this number of
    questions, so a column's p-value depends on its own values only."""
    n, m = differences.shape
    p_values = [1.0] * m
    drawn: list[int] = []
    for column in range(m):
        nonzero = differences[:, column][differences[:, column] != 0]
        if not len(nonzero):
            continue
        if 2 ** len(nonzero) <= n_permutations:
            signs = _all_signs(len(nonzero))
            p_values[column] = _hits(signs @ nonzero, nonzero) / len(signs)
        else:
            drawn.append(column)
    if drawn:
        sample = differences[:, drawn]
        hits = np.zeros(len(drawn), dtype=np.int64)
        rng = np.random.default_rng(seed)
        batch = max(1, _MAX_BATCH_CELLS // n)
        for done in range(0, n_permutations, batch):
            size = min(batch, n_permutations - done)
            signs = (rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1).astype(np.float64)
            flipped = signs @ sample
            hits += [_hits(flipped[:, i], sample[:, i]) for i in range(len(drawn))]
        for column, count in zip(drawn, hits, strict=True):
            p_values[column] = (1 + int(count)) / (1 + n_permutations)
    return p_values


def _hits(flipped: npt.NDArray[np.float64], differences: npt.NDArray[np.float64]) -> int:
    """How many flipped sums are at least as far from 0 as the observed one. Sums of floats in another
    order differ in the last bits: a flipped sum equal to the observed one must count."""
    observed = abs(float(differences.sum()))
    tolerance = 1e-9 * max(1.0, float(np.abs(differences).sum()))
    return int((np.abs(flipped) >= observed - tolerance).sum())


def _all_signs(n: int) -> npt.NDArray[np.float64]:
    """Every vector of n signs (2^n rows)."""
    codes = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)[None, :]
    return ((codes & 1) * 2 - 1).astype(np.float64)


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: p~_(j) = max_{i<=j} min(1, (m-i+1) p_(i))
    over the p-values sorted ascending (ties keep their order)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for position, i in enumerate(order):
        running = max(running, min(1.0, (m - position) * p_values[i]))
        adjusted[i] = running
    return adjusted
