"""An answer metric's summary over its ok rows: the mean and the counts pandas gives, to the last bit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.answers.tables import ok_mean, outcome_columns, outcome_summary
from rag_eval_pipeline.core.answers.types import MetricOutcome, MetricStatus

STATUSES: tuple[MetricStatus, ...] = ("ok", "skipped", "failed")


def pandas_ok_mean(frame: pd.DataFrame, name: str) -> float:
    """The summary's earlier form: pandas' mean of the ok rows."""
    values = frame.loc[frame[f"{name}_status"] == "ok", name].astype("float64")
    return float(values.mean()) if len(values) else float("nan")


def frame_of(rng: np.random.Generator, rows: int) -> pd.DataFrame:
    columns: dict[str, object] = {}
    for name in ("keyword", "semantic"):
        outcomes = []
        for _ in range(rows):
            status: MetricStatus = STATUSES[int(rng.choice(3, p=[0.7, 0.2, 0.1]))]
            value = float(rng.uniform()) if rng.uniform() > 0.05 else float("nan")  # ok, yet missing: skipped
            outcomes.append(MetricOutcome(value if status == "ok" else None, status, ""))
        columns |= outcome_columns(name, outcomes)
    return pd.DataFrame(columns)


@pytest.mark.parametrize("rows", [0, 1, 7, 85, 400])
def test_the_summary_is_the_pandas_mean_of_the_ok_rows_and_their_counts(rows: int) -> None:
    for seed in range(20):
        frame = frame_of(np.random.default_rng(seed), rows)
        summary = outcome_summary(frame, ["keyword", "semantic"])
        for name in ("keyword", "semantic"):
            expected = pandas_ok_mean(frame, name)
            assert ok_mean(frame, name) == expected or (
                math.isnan(expected) and math.isnan(ok_mean(frame, name))
            )
            got = summary[f"{name}_mean"]
            assert got == expected or (math.isnan(expected) and math.isnan(got)), (rows, seed, name)
            for kind in STATUSES:
                assert summary[f"{name}_n_{kind}"] == int((frame[f"{name}_status"] == kind).sum())


def test_a_metric_that_never_applied_has_no_mean_not_zero() -> None:
    frame = pd.DataFrame(outcome_columns("keyword", [MetricOutcome(None, "skipped", "no answer")] * 3))
    assert math.isnan(ok_mean(frame, "keyword"))
    assert outcome_summary(frame, ["keyword"])["keyword_n_skipped"] == 3
