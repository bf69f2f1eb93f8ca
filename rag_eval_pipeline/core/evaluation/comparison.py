"""Is B better than A? Per-metric differences over the questions both answered, with a paired bootstrap.

Pairing by question id removes the spread between questions (some are simply hard for every setup), so a
small but consistent change is visible where two independent intervals would overlap. The interval is the
percentile bootstrap of the mean per-question difference, seeded, so the same runs always give the same
verdict. Every metric here is higher-is-better.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..metrics.aggregate import summarize
from ..store.history import HistoryError, HistoryStore, PartitionKey, ResolvedRef, RunRecord
from .comparability import Basis

Verdict = Literal["better", "worse", "no significant difference"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


@dataclass(frozen=True)
class MetricDelta:
    """B - A for one metric over the ``n_paired`` questions with a value in both (means over those)."""

    metric: str
    n_paired: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    confidence: float
    verdict: Verdict


def paired_delta(
    metric: str,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> MetricDelta:
    """``a[i]`` and ``b[i]`` are the same question. The verdict is ``better``/``worse`` when the interval
    excludes 0; fewer than two pairs cannot show a difference (NaN interval, no significant difference)."""
    values_a = np.asarray(a, dtype=np.float64)
    values_b = np.asarray(b, dtype=np.float64)
    if values_a.shape != values_b.shape or values_a.ndim != 1:
        raise ValueError(
            f"{metric}: paired values need two 1-d arrays of one length, got {values_a.shape} and {values_b.shape}"
        )
    n = int(values_a.shape[0])
    if n == 0:
        nan = math.nan
        return MetricDelta(metric, 0, nan, nan, nan, nan, nan, confidence, "no significant difference")
    differences = values_b - values_a
    mean_a, mean_b = float(values_a.mean()), float(values_b.mean())
    if n < 2:
        return MetricDelta(
            metric,
            n,
            mean_a,
            mean_b,
            float(differences.mean()),
            math.nan,
            math.nan,
            confidence,
            "no significant difference",
        )
    # the bootstrap of the mean per-question difference is the paired bootstrap of mean(B) - mean(A)
    summary = summarize(differences, metric, n_resamples=n_resamples, seed=seed, confidence=confidence)
    verdict: Verdict = "no significant difference"
    if summary.ci_low > 0:
        verdict = "better"
    elif summary.ci_high < 0:
        verdict = "worse"
    return MetricDelta(
        metric, n, mean_a, mean_b, summary.mean, summary.ci_low, summary.ci_high, confidence, verdict
    )


def metric_values(frame: pd.DataFrame, metric: str, where: str = "the table") -> pd.Series:
    """A metric per question id, NaN where it has no value. Answer metrics come with ``<metric>_status``:
    only ``ok`` rows count (a skipped or failed metric is no evidence either way)."""
    if metric not in frame.columns:
        raise HistoryError(
            f"{where} has no metric {metric!r}; its metrics: {', '.join(metric_columns(frame))}"
        )
    if "question_id" not in frame.columns:
        raise HistoryError(f"{where} has no question_id column: it holds no per-question rows")
    duplicated = frame["question_id"][frame["question_id"].duplicated()]
    if len(duplicated):
        raise HistoryError(
            f"{where} holds question {duplicated.iloc[0]!r} more than once: compare one run per partition"
        )
    values = pd.to_numeric(frame[metric], errors="coerce").astype("float64")
    status = f"{metric}_status"
    if status in frame.columns:
        values = values.where(frame[status].astype(str) == "ok")
    return pd.Series(values.to_numpy(), index=frame["question_id"].astype(str).to_numpy(), name=metric)


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """The per-question metric columns: floats (answer metrics: those with a status column)."""
    with_status = [c for c in frame.columns if f"{c}_status" in frame.columns]
    if with_status:
        return with_status
    return [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]


@dataclass(frozen=True)
class FrameComparison:
    n_a: int
    n_b: int
    n_shared: int  # questions in both runs (a metric may pair fewer: those with a value in both)
    deltas: tuple[MetricDelta, ...]


def compare_frames(
    a: pd.DataFrame,
    b: pd.DataFrame,
    metrics: Sequence[str],
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
    names: tuple[str, str] = ("A", "B"),
) -> FrameComparison:
    """Per-question rows of one run each; questions matched by id, in sorted order (row order in a file
    never changes a number)."""
    if not metrics:
        raise HistoryError("no metrics to compare")
    shared = sorted(set(a["question_id"].astype(str)) & set(b["question_id"].astype(str)))
    deltas = []
    for metric in metrics:
        values_a = metric_values(a, metric, names[0]).reindex(shared)
        values_b = metric_values(b, metric, names[1]).reindex(shared)
        both = values_a.notna() & values_b.notna()
        deltas.append(
            paired_delta(
                metric,
                values_a[both].to_numpy(),
                values_b[both].to_numpy(),
                confidence=confidence,
                n_resamples=n_resamples,
                seed=seed,
            )
        )
    return FrameComparison(len(a), len(b), len(shared), tuple(deltas))


@dataclass(frozen=True)
class RunComparison:
    """One partition of A against the same partition of B (or two single runs of different partitions)."""

    run_a: RunRecord
    run_b: RunRecord
    result: FrameComparison
    # how B was measured otherwise than A ("" when alike; core/evaluation/comparability.py): the deltas then pair
    # only the questions both answered, and do not say how the setup changed
    difference: str = ""

    @property
    def label(self) -> str:
        if self.run_a.partition == self.run_b.partition:
            return str(self.run_a.partition)
        return f"{self.run_a.partition} vs {self.run_b.partition}"


@dataclass(frozen=True)
class Comparison:
    a: ResolvedRef
    b: ResolvedRef
    table: str
    runs: tuple[RunComparison, ...]
    only_a: tuple[PartitionKey, ...]  # partitions A evaluated and B did not: not compared
    only_b: tuple[PartitionKey, ...]


def pair_runs(
    a: ResolvedRef, b: ResolvedRef
) -> tuple[list[tuple[RunRecord, RunRecord]], tuple[PartitionKey, ...], tuple[PartitionKey, ...]]:
    """Partitions present in both; two single runs of different partitions (two setups on the same
    questions) are compared with each other."""
    common = sorted(set(a.partitions) & set(b.partitions))
    if not common and len(a.runs) == 1 and len(b.runs) == 1:
        return [(a.runs[0], b.runs[0])], (), ()
    pairs = []
    for partition in common:
        run_a, run_b = a.run_for(partition), b.run_for(partition)
        assert run_a is not None and run_b is not None
        pairs.append((run_a, run_b))
    only_a = tuple(sorted(set(a.partitions) - set(common)))
    only_b = tuple(sorted(set(b.partitions) - set(common)))
    return pairs, only_a, only_b


def compare(
    history: HistoryStore,
    ref_a: str,
    ref_b: str,
    metrics: Sequence[str],
    *,
    table: str = "retrieval_metrics",
    confidence: float,
    n_resamples: int,
    seed: int,
) -> Comparison:
    """Two evaluations or runs from the history, partition by partition."""
    a, b = history.resolve(ref_a), history.resolve(ref_b)
    pairs, only_a, only_b = pair_runs(a, b)
    if not pairs:
        raise HistoryError(
            f"{a.describe()} and {b.describe()} share no partition: A has {', '.join(map(str, a.partitions))}; "
            f"B has {', '.join(map(str, b.partitions))}"
        )
    rows = history.question_rows(table, [run for pair in pairs for run in pair])
    compared = []
    for run_a, run_b in pairs:
        frame_a = rows[rows["run_id"] == run_a.run_id]
        frame_b = rows[rows["run_id"] == run_b.run_id]
        for run, frame in ((run_a, frame_a), (run_b, frame_b)):
            if frame.empty:
                raise HistoryError(
                    f"run {run.run_id} ({run.partition}) has no rows in {table}: it did not evaluate that "
                    "table, or retention removed them"
                )
        result = compare_frames(
            frame_a,
            frame_b,
            metrics,
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
            names=(f"{table} of run {run_a.run_id}", f"{table} of run {run_b.run_id}"),
        )
        difference = Basis.of_questions(frame_b).difference(Basis.of_questions(frame_a))
        compared.append(RunComparison(run_a, run_b, result, difference))
    return Comparison(a, b, table, tuple(compared), only_a, only_b)
