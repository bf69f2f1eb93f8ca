"""Did a partition get worse than its baseline? Per metric: the paired difference now - baseline over the
questions both runs have, its bootstrap interval and the verdict.

A metric FAILS when its mean dropped by more than the margin AND the interval of the drop lies entirely
below 0: a drop within the margin is tolerated noise or an accepted trade-off, and a large drop on a few
questions with a wide interval is not yet evidence. A quick-mode run (a sample of the questions) is
compared on the questions it shares with the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..settings.monitoring_settings import RegressionSettings
from .comparison import compare_frames


@dataclass(frozen=True)
class MetricRegression:
    metric: str
    n_paired: int
    mean_baseline: float
    mean_now: float
    delta: float  # now - baseline, over the paired questions
    ci_low: float
    ci_high: float
    margin: float
    failed: bool

    @property
    def comparable(self) -> bool:
        return not math.isnan(self.ci_high)


@dataclass(frozen=True)
class RegressionVerdict:
    metrics: tuple[MetricRegression, ...]
    n_now: int
    n_baseline: int
    n_shared: int  # questions in both runs
    confidence: float

    @property
    def failed(self) -> bool:
        return any(m.failed for m in self.metrics)

    @property
    def failed_metrics(self) -> tuple[str, ...]:
        return tuple(m.metric for m in self.metrics if m.failed)

    def describe(self) -> str:
        if self.n_shared == 0:
            return "no question in common with the baseline: nothing to compare"
        failed = [m for m in self.metrics if m.failed]
        if failed:
            return "regressed: " + "; ".join(
                f"{m.metric} {m.mean_baseline:.4f} -> {m.mean_now:.4f} ({m.delta:+.4f}, "
                f"{self.confidence:.0%} CI [{m.ci_low:+.4f}, {m.ci_high:+.4f}], margin {m.margin})"
                for m in failed
            )
        return f"no metric dropped by more than the margin with its whole interval below 0 ({self.n_shared} questions paired)"


def regression_verdict(
    now: pd.DataFrame, baseline: pd.DataFrame, metrics: Sequence[str], settings: RegressionSettings
) -> RegressionVerdict:
    """``now`` and ``baseline`` are one run's per-question rows each (``question_id`` plus the metric
    columns; answer metrics with their ``_status`` columns)."""
    result = compare_frames(
        baseline,
        now,
        metrics,
        confidence=settings.confidence,
        n_resamples=settings.n_resamples,
        seed=settings.seed,
        names=("the baseline run", "the new run"),
    )
    checked = tuple(
        MetricRegression(
            d.metric,
            d.n_paired,
            d.mean_a,
            d.mean_b,
            d.delta,
            d.ci_low,
            d.ci_high,
            settings.margin,
            failed=d.n_paired >= 2 and d.delta < -settings.margin and d.ci_high < 0,
        )
        for d in result.deltas
    )
    return RegressionVerdict(checked, result.n_b, result.n_a, result.n_shared, settings.confidence)
