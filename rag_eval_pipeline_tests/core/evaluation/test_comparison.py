"""Paired bootstrap comparisons: checked against scipy and a plain numpy loop, real differences vs noise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rag_eval_pipeline.core.evaluation.comparison import compare, compare_frames, metric_values, paired_delta
from rag_eval_pipeline.core.metrics.aggregate import summarize
from rag_eval_pipeline.core.store.history import HistoryError, HistoryStore, PartitionKey
from rag_eval_pipeline_tests.history_files import at, retrieval_rows, write_run

SETTINGS: dict[str, Any] = {"confidence": 0.95, "n_resamples": 4000, "seed": 7}


def numpy_paired_bootstrap(
    a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """The textbook loop: resample question indices, mean of B - A on each resample, percentiles."""
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(n_resamples):
        index = rng.integers(0, len(a), size=len(a))
        means.append(float(np.mean(b[index] - a[index])))
    alpha = (1 - confidence) / 2
    low, high = np.percentile(means, [100 * alpha, 100 * (1 - alpha)])
    return float(low), float(high)


def test_the_interval_matches_scipy_and_a_plain_numpy_bootstrap() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(0.2, 0.9, size=60)
    b = np.clip(a + rng.normal(0.03, 0.08, size=60), 0, 1)
    ours = paired_delta("m", a, b, confidence=0.9, n_resamples=20000, seed=3)
    reference = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=20000,
        confidence_level=0.9,
        method="percentile",
        random_state=np.random.default_rng(5),
    ).confidence_interval
    loop = numpy_paired_bootstrap(a, b, 20000, 11, 0.9)
    assert ours.delta == pytest.approx(float(np.mean(b - a)))
    assert ours.mean_a == pytest.approx(a.mean()) and ours.mean_b == pytest.approx(b.mean())
    # three independent Monte Carlo runs of one statistic agree to well within its standard error (~0.01)
    assert ours.ci_low == pytest.approx(reference.low, abs=0.002) == pytest.approx(loop[0], abs=0.002)
    assert ours.ci_high == pytest.approx(reference.high, abs=0.002) == pytest.approx(loop[1], abs=0.002)
    assert ours.n_paired == 60 and ours.confidence == 0.9


def test_a_real_difference_is_better_or_worse_and_pure_noise_is_not_significant() -> None:
    rng = np.random.default_rng(2)
    a = rng.uniform(0, 1, size=40)
    improved = np.clip(a + 0.1 + rng.normal(0, 0.03, size=40), 0, 1.2)
    better = paired_delta("m", a, improved, **SETTINGS)
    assert better.verdict == "better" and 0 < better.ci_low < better.delta < better.ci_high
    assert better.ci_low <= 0.1 <= better.ci_high + 0.01
    worse = paired_delta("m", improved, a, **SETTINGS)
    assert worse.verdict == "worse" and worse.ci_high < 0
    assert worse.delta == pytest.approx(-better.delta)
    # two draws from one distribution: a difference of noise only
    noise = paired_delta("m", rng.uniform(0, 1, size=40), rng.uniform(0, 1, size=40), **SETTINGS)
    assert noise.verdict == "no significant difference" and noise.ci_low < 0 < noise.ci_high
    # nothing changed at all
    same = paired_delta("m", a, a, **SETTINGS)
    assert (same.delta, same.ci_low, same.ci_high, same.verdict) == (0, 0, 0, "no significant difference")


def test_pairing_sees_a_small_consistent_gain_that_separate_intervals_hide() -> None:
    """Questions differ wildly in difficulty, every one improves by 0.02: the paired interval excludes 0
    while the two runs' own intervals overlap (an unpaired comparison would call it noise)."""
    difficulty = np.linspace(0.05, 0.95, 30)
    a, b = difficulty, difficulty + 0.02 + np.tile([-0.005, 0.005], 15)
    paired = paired_delta("m", a, b, **SETTINGS)
    assert paired.verdict == "better"
    summary_a, summary_b = summarize(a, "a", seed=7), summarize(b, "b", seed=7)
    assert summary_b.ci_low < summary_a.ci_high  # the separate intervals overlap


def test_the_same_inputs_give_the_same_interval_whatever_the_row_order() -> None:
    rng = np.random.default_rng(4)
    frame_a = pd.DataFrame({"question_id": [f"q{i}" for i in range(30)], "m": rng.uniform(0, 1, 30)})
    frame_b = frame_a.assign(m=frame_a["m"] + rng.normal(0.02, 0.1, 30))
    first = compare_frames(frame_a, frame_b, ["m"], **SETTINGS)
    shuffled = compare_frames(
        frame_a.sample(frac=1, random_state=1), frame_b.sample(frac=1, random_state=2), ["m"], **SETTINGS
    )
    assert first == shuffled
    other_seed = compare_frames(frame_a, frame_b, ["m"], confidence=0.95, n_resamples=4000, seed=8)
    assert other_seed.deltas[0].ci_low != first.deltas[0].ci_low  # the seed, not luck, makes it repeat


def test_only_questions_in_both_runs_with_an_ok_value_are_paired() -> None:
    a = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3", "q4", "q5"],
            "keyword": [1.0, 0.0, 1.0, 1.0, 0.0],
            "keyword_status": ["ok", "ok", "ok", "failed", "ok"],
        }
    )
    b = pd.DataFrame(
        {
            "question_id": ["q2", "q3", "q4", "q5", "q6"],
            # q5's value is ignored: its status is skipped; q4 failed in A
            "keyword": [1.0, 1.0, 0.0, 0.9, 1.0],
            "keyword_status": ["ok", "ok", "ok", "skipped", "ok"],
        }
    )
    result = compare_frames(a, b, ["keyword"], **SETTINGS)
    assert (result.n_a, result.n_b, result.n_shared) == (5, 5, 4)
    delta = result.deltas[0]
    assert delta.n_paired == 2 and (delta.mean_a, delta.mean_b) == (0.5, 1.0)
    assert metric_values(a, "keyword").isna().tolist() == [False, False, False, True, False]


def test_one_pair_cannot_show_a_difference_and_bad_input_is_named() -> None:
    one = paired_delta("m", [0.2], [0.9], **SETTINGS)
    assert (
        one.verdict == "no significant difference"
        and np.isnan(one.ci_low)
        and one.delta == pytest.approx(0.7)
    )
    frame = pd.DataFrame({"question_id": ["q1", "q1"], "m": [0.1, 0.2], "label": ["x", "y"]})
    with pytest.raises(HistoryError, match="holds question 'q1' more than once"):
        compare_frames(frame, frame, ["m"], **SETTINGS)
    with pytest.raises(HistoryError, match="A has no metric 'nope'; its metrics: m"):
        compare_frames(frame.iloc[:1], frame.iloc[:1], ["nope"], **SETTINGS)


def rows(recall: float, n: int = 12, step: float = 0.01) -> dict[str, dict[str, float]]:
    return {"span_recall": {f"q{i:02d}": recall + step * (i % 3) for i in range(n)}}


def test_evaluations_are_compared_partition_by_partition(tmp_path: Path) -> None:
    for run, profile, recall in (("a1", "p1", 0.5), ("a2", "p2", 0.5), ("b1", "p1", 0.7), ("b3", "p3", 0.5)):
        evaluation = "eval-a" if run.startswith("a") else "eval-b"
        write_run(
            tmp_path,
            retrieval_rows(run, "c", profile, rows(recall), at(1), evaluation_id=evaluation, mode="full"),
        )
    with HistoryStore(tmp_path) as history:
        result = compare(history, "eval-a", "eval-b", ["span_recall"], **SETTINGS)
        with pytest.raises(HistoryError, match="no metric 'mrr'"):
            compare(history, "eval-a", "eval-b", ["mrr"], **SETTINGS)
        # two single runs of different partitions: two setups on the same questions
        single = compare(history, "a2", "b3", ["span_recall"], **SETTINGS)
    assert [r.label for r in result.runs] == ["c|p1"]
    assert result.only_a == (PartitionKey("c", "p2"),) and result.only_b == (PartitionKey("c", "p3"),)
    delta = result.runs[0].result.deltas[0]
    assert delta.verdict == "better" and delta.delta == pytest.approx(0.2)
    assert [r.label for r in single.runs] == ["c|p2 vs c|p3"]
    assert single.runs[0].result.deltas[0].verdict == "no significant difference"
