"""Traffic-weighted means: each question counts as often as users asked it, beside the plain mean."""

from __future__ import annotations

import math

import pytest

from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.metrics.names import weighted_mean_column
from rag_eval_pipeline.core.metrics.traffic import (
    is_weighted,
    traffic_count,
    weighted_mean_columns,
    weighted_means,
)


def test_the_weighted_mean_counts_each_question_as_often_as_it_was_asked() -> None:
    rows = [
        {"span_recall": 1.0, "mrr": 0.5},
        {"span_recall": 0.0, "mrr": 1.0},
        {"span_recall": 0.5, "mrr": 0.0},
    ]
    # by hand: (8*1 + 1*0 + 1*0.5) / 10 = 0.85 and (8*0.5 + 1*1 + 0) / 10 = 0.5; plain means 0.5 and 0.5
    assert weighted_means(rows, ["span_recall", "mrr"], [8, 1, 1]) == pytest.approx(
        {"span_recall": 0.85, "mrr": 0.5}
    )
    assert weighted_mean_columns({"span_recall_1000t": 0.85}) == {"span_recall_1000t_weighted_mean": 0.85}
    assert weighted_mean_column("span_recall_1000t") == "span_recall_1000t_weighted_mean"


def test_equal_counts_give_the_plain_mean_and_no_rows_give_nan() -> None:
    rows = [{"m": 0.2}, {"m": 0.6}]
    assert weighted_means(rows, ["m"], [3, 3]) == pytest.approx({"m": 0.4})
    assert math.isnan(weighted_means([], ["m"], [])["m"])


def test_a_set_is_weighted_only_when_some_count_is_not_1() -> None:
    assert not is_weighted([1, 1.0, 1]) and is_weighted([1, 2]) and not is_weighted([])


def test_the_count_comes_from_the_metadata_and_a_bad_one_names_the_question() -> None:
    assert (
        traffic_count({}) == 1.0
        and traffic_count({"count": 40}) == 40.0
        and traffic_count({"count": None}) == 1
    )
    for bad in (0, -2, "7", True, float("inf")):
        with pytest.raises(DatasetError, match=r"question q7: metadata 'count' must be a positive number"):
            traffic_count({"count": bad}, "q7")


def test_a_row_without_the_metric_or_with_nan_is_an_error() -> None:
    with pytest.raises(ValueError, match="row 1 has no value for metric 'm'"):
        weighted_means([{"m": 1.0}, {}], ["m"], [1, 2])
    with pytest.raises(ValueError, match="non-finite value in row 0"):
        weighted_means([{"m": float("nan")}], ["m"], [2])
