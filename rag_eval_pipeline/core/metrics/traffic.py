"""Metrics weighted by the queries' traffic: a question users asked 40 times counts 40 times.

A mean over questions counts each question once, which is right for a test set a person wrote. For
queries taken from real traffic (core/judging), the question asked 40 times a day matters 40 times as
much as one asked once: the traffic-weighted mean says how the setup does on the traffic, the plain
mean how it does on the kinds of question. Both are reported (names: core/metrics/names.py); neither
replaces the other, and when every count is 1 nothing changes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import DatasetError
from .names import QUERY_COUNT_KEY, weighted_mean_column


def traffic_legend(plain: str, weighted: str) -> str:
    """The one line every view prints under a table that shows both means, naming its two columns."""
    return (
        f"{plain}: each question counts once; {weighted}: each question counts as often as users asked it "
        f"(its count), the mean over the traffic"
    )


def traffic_count(metadata: Mapping[str, Any], question_id: str = "") -> float:
    """The question's ``count`` (1 when it has none): how often it was asked. A count that is not a
    positive finite number is a ``DatasetError`` naming the question."""
    value = metadata.get(QUERY_COUNT_KEY, 1)
    if value is None:
        return 1.0
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        where = f"question {question_id}: " if question_id else ""
        raise DatasetError(
            f"{where}metadata {QUERY_COUNT_KEY!r} must be a positive number (how often the query was asked), "
            f"got {value!r}: fix it in the question set, or remove it to count the question once"
        )
    return float(value)


def is_weighted(counts: Iterable[float]) -> bool:
    """True when some count differs from 1: only then do weighted means say anything new."""
    return any(count != 1 for count in counts)


def weighted_means(
    rows: Sequence[Mapping[str, Any]], metric_names: Iterable[str], counts: Sequence[float]
) -> dict[str, float]:
    """Per metric, sum(count * value) / sum(count) over the rows (a row per question, ``counts`` in the
    same order); NaN without rows. A row without the metric, or with a non-finite value, is an error."""
    if len(rows) != len(counts):
        raise ValueError(f"{len(rows)} rows but {len(counts)} counts")
    total = math.fsum(counts)
    means = {}
    for name in metric_names:
        values = []
        for i, row in enumerate(rows):
            if name not in row:
                raise ValueError(f"row {i} has no value for metric {name!r}")
            value = float(row[name])
            if not math.isfinite(value):
                raise ValueError(f"metric {name!r} has a non-finite value in row {i}; cannot weight it")
            values.append(value)
        means[name] = (
            math.fsum(c * v for c, v in zip(counts, values, strict=True)) / total if rows else math.nan
        )
    return means


def weighted_mean_columns(means: Mapping[str, float]) -> dict[str, float]:
    """The weighted means as table columns, ``<metric>_weighted_mean``."""
    return {weighted_mean_column(name): value for name, value in means.items()}
