"""Power: the smallest difference a question set can detect, and how many questions a difference needs.

A tie in tier 1 (tiers.py) says "these questions cannot tell them apart", not "they are equal": with
more questions the test may separate them. This module says how far the questions reach, for the
paired differences d_i = x_best,i - x_other,i over the n questions both setups answered (sd: their
standard deviation, ddof 1), at power 1 - beta (0.8) and a two-sided level a = alpha / h, where h is
the number of comparisons Holm's correction has to share alpha between (below).

The test is the tiers' sign-flip permutation test. Its permutation distribution of sum_i s_i d_i has
mean 0 and variance sum_i d_i^2, so (normal approximation) it rejects when

    |sum_i d_i| >= z_a sqrt(sum_i d_i^2)   <=>   |t| >= c(n) = z_a sqrt((n - 1) / (n - z_a^2))

with t = mean(d) / (sd / sqrt(n)) the one-sample t statistic and z_a = z(1 - a/2): a t-test with a
slightly raised critical value. The power of that test against a true mean difference delta, with
lambda = sqrt(n) delta / sd, is about Phi((lambda - c) / sqrt(1 + c^2 / (2 (n - 1)))) (the normal
approximation of the noncentral t), so

    MDD(n) = sd / sqrt(n) x (c(n) + z(1 - beta) sqrt(1 + c(n)^2 / (2 (n - 1))))

and the questions needed for a difference delta are the smallest n with MDD(n) <= delta. For large n
both are the textbook (z_a + z(1 - beta)) sd / sqrt(n) and ((z_a + z(1 - beta)) sd / delta)^2; the
corrections matter at the 10 to 40 questions teams start with (they add 5 to 15 % there). A
simulation with the permutation test itself detects the detectable difference 78-83 % of the time from
12 to 200 questions, on normal, zero-heavy and recall-like differences
(rag_eval_pipeline_tests/core/leaderboard/test_power.py); about 75 % when every difference is a whole
hit or miss (+1, -1 or 0: the permutation distribution is then a lattice, and the test conservative),
and less when only a handful of questions differ at all (the exact test of a few signs is coarse). No
difference is detectable below the fewest questions whose exact test can reach the level at all
(2 / 2^n <= a, all differences of one sign) or with n <= z_a^2.

Holm: the best is compared with m challengers at once. The setups outside tier 1 differ clearly (their
p-values are tiny), so Holm's step-down rejects them first and leaves alpha to be shared by the h
challengers still tied with the best: a tier-1 challenger is detected at alpha / h at worst (alpha /
1 when the others are far). The board uses h = the other setups of tier 1 (at least 1): a bound, the
detectable difference is detected at least 80 % of the time, more when fewer challengers are close. A
plan made before any tier exists (`rag-eval questions plan`) gives both ends: h = 1 (the next alone is
that close) and h = m (every challenger is).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

POWER = 0.8
# The difference of the objective's mean `rag-eval questions plan` sizes the questions for by default.
DEFAULT_DETECT = 0.03
_NORMAL = NormalDist()


@dataclass(frozen=True)
class PairedDifferences:
    """The per-question differences of one setup from another over the questions both answered: their
    count, mean and standard deviation (ddof 1; NaN below two questions)."""

    n: int
    mean: float
    sd: float

    @property
    def differ(self) -> bool:
        """Whether the two setups differ on some question."""
        return self.sd > 0 or (self.mean != 0 and not math.isnan(self.mean))

    @classmethod
    def of(cls, best: pd.Series, other: pd.Series) -> PairedDifferences:
        """``best - other``, paired by index (question id); a question missing or NaN in either is left
        out, as in the tiers' test."""
        paired = pd.concat([best.rename("best"), other.rename("other")], axis=1, join="inner").dropna()
        d = (paired["best"] - paired["other"]).to_numpy(dtype=np.float64)
        if not len(d):
            return cls(0, math.nan, math.nan)
        total = float(d.sum())
        # the same sums in another order differ in the last bits: a sum the tiers' test calls 0 is 0
        if abs(total) <= 1e-9 * max(1.0, float(np.abs(d).sum())):
            total = 0.0
        return cls(len(d), total / len(d), float(d.std(ddof=1)) if len(d) > 1 else math.nan)


def detectable_difference(
    sd: float, n: int, alpha: float = 0.05, comparisons: int = 1, power: float = POWER
) -> float | None:
    """The minimum detectable difference of the mean (MDD) between two setups over ``n`` paired questions.

    MDD(n) = sd / sqrt(n) x (c + z(power) sqrt(1 + c^2 / (2 (n - 1)))), c = z_a sqrt((n - 1) / (n - z_a^2)),
    z_a = z(1 - a / 2), a = alpha / comparisons (the module docstring derives it).

    Args:
        sd: standard deviation of the per-question differences (ddof 1).
        n: questions both setups answered.
        alpha: the family-wise two-sided significance level (the tiers' ``alpha``).
        comparisons: how many comparisons share ``alpha`` (Holm's h); 1 for a single pair.
        power: the probability of detecting a true difference of the returned size.

    Returns:
        The difference detected with probability ``power``, in the metric's units (0 when every
        question differs by the same amount); None when ``n`` questions cannot reach the level at all.
    """
    _check(alpha, comparisons, power)
    if math.isnan(sd) or n < fewest_questions(alpha, comparisons):
        return None
    level = alpha / comparisons
    z_a, z_b = _NORMAL.inv_cdf(1 - level / 2), _NORMAL.inv_cdf(power)
    if n <= z_a**2:
        return None
    critical = z_a * math.sqrt((n - 1) / (n - z_a**2))
    return sd / math.sqrt(n) * (critical + z_b * math.sqrt(1 + critical**2 / (2 * (n - 1))))


def questions_needed(
    difference: float, sd: float, alpha: float = 0.05, comparisons: int = 1, power: float = POWER
) -> int | None:
    """How many paired questions detect a mean difference of ``difference`` with probability ``power``.

    The smallest n with MDD(n) <= |difference| (``detectable_difference`` decreases with n), about
    ((z(1 - a / 2) + z(power)) sd / difference)^2 for large n.

    Args:
        difference: the true mean difference to detect (its sign does not matter).
        sd: standard deviation of the per-question differences (ddof 1).
        alpha: the family-wise two-sided significance level.
        comparisons: how many comparisons share ``alpha`` (Holm's h).
        power: the probability of detecting it.

    Returns:
        The number of questions; None when no number of questions detects it (a difference of 0, or an
        unknown sd).
    """
    _check(alpha, comparisons, power)
    size = abs(difference)
    if size == 0 or math.isnan(size) or math.isnan(sd):
        return None
    low = fewest_questions(alpha, comparisons)
    while detectable_difference(sd, low, alpha, comparisons, power) is None:
        low += 1
    if _mdd(sd, low, alpha, comparisons, power) <= size:
        return low
    high = 2 * low
    while _mdd(sd, high, alpha, comparisons, power) > size:
        low, high = high, 2 * high
    while high - low > 1:  # MDD(low) > size >= MDD(high)
        middle = (low + high) // 2
        low, high = (middle, high) if _mdd(sd, middle, alpha, comparisons, power) > size else (low, middle)
    return high


def fewest_questions(alpha: float = 0.05, comparisons: int = 1) -> int:
    """The fewest questions whose exact sign-flip test can reach the level alpha / comparisons at all:
    its smallest two-sided p-value is 2 / 2^n (every difference of one sign)."""
    return max(2, math.ceil(1 + math.log2(comparisons / alpha)))


def _mdd(sd: float, n: int, alpha: float, comparisons: int, power: float) -> float:
    value = detectable_difference(sd, n, alpha, comparisons, power)
    return math.inf if value is None else value


def _check(alpha: float, comparisons: int, power: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if comparisons < 1:
        raise ValueError(f"comparisons must be at least 1, got {comparisons}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")


# -- the board's figures (ranking.py writes them as columns; recommendation.py says them) -------------


@dataclass(frozen=True)
class ChallengerPower:
    """A ranked setup against the best: its paired differences and the questions that would separate
    it from the best at its observed mean difference (None: never, the means are equal)."""

    differences: PairedDifferences
    questions_needed: int | None


@dataclass(frozen=True)
class BoardPower:
    """What the board's questions can detect: ``comparisons`` (Holm's h: the other setups of tier 1, at
    least 1), the difference detectable between the best and the next (``next_differing``; None: not
    with so few questions, or no other setup differs from the best), and each ranked setup against the
    best (None for the best)."""

    comparisons: int
    detectable: float | None
    challengers: tuple[ChallengerPower | None, ...]


def board_power(values: Sequence[pd.Series], tiers: Sequence[int], alpha: float) -> BoardPower:
    """The power figures of a ranked board.

    Args:
        values: one Series of per-question values per ranked setup, indexed by question id, in rank
            order (the best first), as the tiers were computed from.
        tiers: each setup's tier, in the same order.
        alpha: the tiers' family-wise significance level.

    Returns:
        ``BoardPower`` at alpha / h, h = the setups of tier 1 other than the best (at least 1).
    """
    comparisons = max(1, sum(1 for tier in tiers[1:] if tier == 1))
    challengers: list[ChallengerPower | None] = [None]
    for other in values[1:]:
        found = PairedDifferences.of(values[0], other)
        needed = questions_needed(found.mean, found.sd, alpha, comparisons)
        challengers.append(ChallengerPower(found, needed))
    detectable = None
    following = next_differing(challengers)
    if following is not None:
        detectable = detectable_difference(
            following.differences.sd, following.differences.n, alpha, comparisons
        )
    return BoardPower(comparisons, detectable, tuple(challengers))


def next_differing(challengers: Sequence[ChallengerPower | None]) -> ChallengerPower | None:
    """The best ranked challenger whose per-question values differ from the best's somewhere: a setup
    that scores like the best on every question gives nothing to size a difference by."""
    return next((c for c in challengers if c is not None and c.differences.differ), None)
