"""A metric summary as table columns: ``<metric>_mean``, ``_std``, ``_ci_low``, ``_ci_high``, the columns
of the per-run summary rows in history and of the leaderboard."""

from __future__ import annotations

from ..core.metrics.aggregate import MetricSummary


def summary_columns(summaries: dict[str, MetricSummary]) -> dict[str, float]:
    columns: dict[str, float] = {}
    for name, s in summaries.items():
        columns[f"{name}_mean"] = s.mean
        columns[f"{name}_std"] = s.std
        columns[f"{name}_ci_low"] = s.ci_low
        columns[f"{name}_ci_high"] = s.ci_high
    return columns
