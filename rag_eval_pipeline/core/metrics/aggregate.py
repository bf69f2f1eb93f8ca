"""Summaries of per-question metric values: mean, spread and a bootstrap confidence interval.

The interval is a percentile bootstrap of the mean with a fixed seed, so a report regenerated from the
same per-question values shows the same numbers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["MetricSummary", "summarize", "summarize_by_group", "summarize_table", "summary_columns"]

# Bounds the bootstrap matrices (resamples x n: indices, counts) held in memory at once.
_MAX_BATCH_CELLS = 4_000_000
# The largest counts matrix kept for the process (1.6 MB; at most 16 kept).
_KEPT_COUNTS_CELLS = 200_000


@dataclass(frozen=True)
class MetricSummary:
    """A metric over the questions. ``std`` is the sample standard deviation (ddof=1, the spread to
    expect in another sample of questions); ``std_population`` the population one (ddof=0, numpy's
    default, what published tables such as Chroma's report): sqrt((n-1)/n) times ``std``."""

    name: str
    mean: float
    std: float
    ci_low: float
    ci_high: float
    n: int
    std_population: float


class _Resamples:
    """The bootstrap's resamples of ``n`` values (``n_resamples`` rows of indices), drawn from a fresh
    generator seeded with ``seed``: the same indices for every metric of a table, as each metric's own
    generator would draw them. A resample's mean is taken from how often it holds each value (a row of
    counts times the values, over n): one small matrix-vector product a metric, where gathering every
    resampled value and averaging them was most of a table's summary (28 metrics over 85 questions
    15.7 -> 4.2 CPU ms, 1.9 with the counts kept; over 8 questions 1.9 -> 1.0). Held as one counts
    matrix when it fits in ``_MAX_BATCH_CELLS`` (kept for the process when small: ``_kept_counts``);
    beyond that, drawn again for each metric in batches of at most that many cells. The counts sum in
    another order than the gathered values did: intervals move in the last bits."""

    def __init__(self, n: int, n_resamples: int, seed: int) -> None:
        self.n, self.n_resamples, self.seed = n, n_resamples, seed
        self._shared: npt.NDArray[np.float64] | None = None

    def means(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The mean of ``values`` in each resample."""
        n, total = self.n, self.n_resamples
        if n * total <= _MAX_BATCH_CELLS:
            if self._shared is None:
                self._shared = (
                    _kept_counts(n, total, self.seed)
                    if n * total <= _KEPT_COUNTS_CELLS
                    else _drawn_counts(n, total, self.seed)
                )
            return self._shared @ values / n
        rng = np.random.default_rng(self.seed)
        batch = max(1, _MAX_BATCH_CELLS // n)
        means = [
            _counts(rng.integers(0, n, size=(min(batch, total - done), n)), n) @ values / n
            for done in range(0, total, batch)
        ]
        return np.concatenate(means)


def _counts(indices: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.float64]:
    """How often each resample (a row of ``indices`` into ``n`` values) draws each value (column)."""
    rows = indices.shape[0]
    flat = (indices + np.arange(rows)[:, None] * n).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(np.float64)


def _drawn_counts(n: int, n_resamples: int, seed: int) -> npt.NDArray[np.float64]:
    """The counts of ``n_resamples`` resamples of ``n`` values, drawn at once from a fresh generator."""
    return _counts(np.random.default_rng(seed).integers(0, n, size=(n_resamples, n)), n)


@functools.lru_cache(maxsize=16)
def _kept_counts(n: int, n_resamples: int, seed: int) -> npt.NDArray[np.float64]:
    """The counts matrix of (n, n_resamples, seed), kept for the process (read-only): resamples depend
    on those three alone, and a run summarizes many samples of one size (each partition's questions, its
    document groups, a regression check's paired deltas), where drawing them was most of the cost."""
    counts = _drawn_counts(n, n_resamples, seed)
    counts.setflags(write=False)
    return counts


def summarize(
    values: Iterable[float],
    name: str,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> MetricSummary:
    """Mean, sample std (ddof=1) and population std (ddof=0), both 0 for one value, and a
    percentile-bootstrap CI of the mean.

    No values give NaN statistics with ``n == 0``; a non-finite value raises ``ValueError`` because it
    would silently poison every statistic.
    """
    data = np.asarray(list(values), dtype=np.float64)
    return _summary(data, name, _Resamples(int(data.shape[0]), n_resamples, seed), confidence)


def _check_arguments(resamples: _Resamples, confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if resamples.n_resamples <= 0:
        raise ValueError(f"n_resamples must be positive, got {resamples.n_resamples}")


def _summary(
    data: npt.NDArray[np.float64], name: str, resamples: _Resamples, confidence: float
) -> MetricSummary:
    _check_arguments(resamples, confidence)
    n = int(data.shape[0])
    if n == 0:
        return MetricSummary(name, math.nan, math.nan, math.nan, math.nan, 0, math.nan)
    if not np.all(np.isfinite(data)):
        raise ValueError(f"metric {name!r} has non-finite values; cannot summarize")
    mean = float(data.mean())
    if n == 1:
        return MetricSummary(name, mean, 0.0, mean, mean, 1, 0.0)
    means = resamples.means(data)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return MetricSummary(
        name, mean, float(data.std(ddof=1)), float(low), float(high), n, float(data.std(ddof=0))
    )


def _column(rows: Sequence[Mapping[str, float | str]], name: str) -> list[float]:
    column = []
    for i, row in enumerate(rows):
        if name not in row:
            raise ValueError(f"row {i} has no value for metric {name!r}")
        value = row[name]
        if isinstance(value, (str, bool)):
            raise TypeError(f"row {i} has a non-numeric value {value!r} for metric {name!r}")
        column.append(float(value))
    return column


def summarize_table(
    rows: Sequence[Mapping[str, float | str]],
    metric_names: Iterable[str],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, MetricSummary]:
    """One summary per metric over the per-question rows, in the order of ``metric_names``: each what
    ``summarize`` gives it, from resamples drawn once for all of them.

    The metrics' resampled means are taken one metric at a time, as ``summarize`` takes them, and the
    rest is reduced for all metrics at once (one quantile call, row-wise means and deviations: the same
    reductions along the same contiguous rows, so the same numbers to the last bit). A partition
    summarizes many small tables (each document group's): per-metric numpy calls were most of their
    cost."""
    names = list(metric_names)
    columns = np.asarray([_column(rows, name) for name in names], dtype=np.float64)
    n = len(rows)
    resamples = _Resamples(n, n_resamples, seed)
    if n < 2 or not names:
        return {
            name: _summary(column, name, resamples, confidence)
            for name, column in zip(names, columns, strict=True)
        }
    _check_arguments(resamples, confidence)
    finite = np.isfinite(columns).all(axis=1)
    if not finite.all():
        bad = names[int(np.flatnonzero(~finite)[0])]
        raise ValueError(f"metric {bad!r} has non-finite values; cannot summarize")
    means = np.stack([resamples.means(column) for column in columns])  # metric x resample
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha], axis=1)
    mean, std, std_population = columns.mean(axis=1), columns.std(axis=1, ddof=1), columns.std(axis=1)
    return {
        name: MetricSummary(
            name, float(mean[i]), float(std[i]), float(low[i]), float(high[i]), n, float(std_population[i])
        )
        for i, name in enumerate(names)
    }


def summary_columns(summaries: Mapping[str, MetricSummary]) -> dict[str, float]:
    """Summaries as table columns, ``<metric>_mean``, ``_std`` (sample, ddof=1), ``_std_pop`` (population,
    ddof=0), ``_ci_low``, ``_ci_high`` per metric: the columns of the per-run summary rows in history and
    of the leaderboard. History written before ``_std_pop`` existed lacks it; its readers give NULL/NaN."""
    columns: dict[str, float] = {}
    for name, s in summaries.items():
        columns[f"{name}_mean"] = s.mean
        columns[f"{name}_std"] = s.std
        columns[f"{name}_std_pop"] = s.std_population
        columns[f"{name}_ci_low"] = s.ci_low
        columns[f"{name}_ci_high"] = s.ci_high
    return columns


def summarize_by_group(
    rows: Sequence[Mapping[str, float | str]],
    group_key: str,
    metric_names: Iterable[str],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict[str, MetricSummary]]:
    """Per-group summaries (e.g. per document folder), groups in sorted order for stable reports."""
    names = list(metric_names)
    groups: dict[str, list[Mapping[str, float | str]]] = {}
    for i, row in enumerate(rows):
        if group_key not in row:
            raise ValueError(f"row {i} has no group key {group_key!r}")
        groups.setdefault(str(row[group_key]), []).append(row)
    return {
        group: summarize_table(groups[group], names, n_resamples, seed, confidence)
        for group in sorted(groups)
    }
