"""The regression verdict: a drop beyond the margin AND an interval below 0 fails, nothing less does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.evaluation.regression import regression_verdict
from rag_eval_pipeline.core.settings.monitoring_settings import RegressionSettings

SETTINGS = RegressionSettings(margin=0.02, confidence=0.95, metrics=("m",), n_resamples=2000, seed=7)
QUESTIONS = [f"q{i:02d}" for i in range(40)]


def frame(values: np.ndarray, questions: list[str] = QUESTIONS) -> pd.DataFrame:
    return pd.DataFrame({"question_id": questions, "m": values})


def baseline_values() -> np.ndarray:
    return np.random.default_rng(0).uniform(0.3, 0.9, size=len(QUESTIONS))


def noise(scale: float) -> np.ndarray:
    return np.random.default_rng(1).normal(0, scale, size=len(QUESTIONS))


def test_a_significant_drop_beyond_the_margin_fails_with_its_numbers() -> None:
    base = baseline_values()
    now = base - 0.1 + noise(0.02)
    verdict = regression_verdict(frame(now), frame(base), ["m"], SETTINGS)
    (m,) = verdict.metrics
    assert verdict.failed and verdict.failed_metrics == ("m",) and m.failed
    assert m.mean_baseline == pytest.approx(base.mean()) and m.mean_now == pytest.approx(now.mean())
    assert m.delta == pytest.approx(now.mean() - base.mean()) and m.delta < -SETTINGS.margin
    assert m.ci_low < m.delta < m.ci_high < 0 and m.margin == 0.02 and m.n_paired == 40
    assert "regressed: m" in verdict.describe()


def test_a_significant_drop_within_the_margin_passes() -> None:
    base = baseline_values()
    verdict = regression_verdict(frame(base - 0.01 + noise(0.002)), frame(base), ["m"], SETTINGS)
    (m,) = verdict.metrics
    assert m.ci_high < 0 and m.delta > -SETTINGS.margin and not verdict.failed


def test_a_large_but_noisy_drop_is_not_yet_evidence() -> None:
    base = baseline_values()
    now = np.clip(base - 0.04 + noise(0.4), 0, 1)
    verdict = regression_verdict(frame(now), frame(base), ["m"], SETTINGS)
    (m,) = verdict.metrics
    assert m.delta < -SETTINGS.margin and m.ci_high > 0 and not verdict.failed


def test_an_improvement_passes_and_a_tighter_margin_changes_the_verdict() -> None:
    base = baseline_values()
    assert not regression_verdict(frame(base + 0.1), frame(base), ["m"], SETTINGS).failed
    small_drop = frame(base - 0.01 + noise(0.002))
    strict = RegressionSettings(margin=0.005, metrics=("m",), n_resamples=2000, seed=7)
    assert regression_verdict(small_drop, frame(base), ["m"], strict).failed


def test_a_quick_run_is_compared_on_the_questions_it_shares_with_the_baseline() -> None:
    base = baseline_values()
    sample = QUESTIONS[::4]  # a quick-mode sample of 10 questions
    now = frame(base[::4] - 0.2, sample)
    verdict = regression_verdict(now, frame(base), ["m"], SETTINGS)
    (m,) = verdict.metrics
    assert (verdict.n_now, verdict.n_baseline, verdict.n_shared, m.n_paired) == (10, 40, 10, 10)
    assert m.mean_baseline == pytest.approx(base[::4].mean())  # over the sample, not all 40
    assert m.delta == pytest.approx(-0.2) and verdict.failed


def test_no_shared_question_means_nothing_to_compare() -> None:
    verdict = regression_verdict(frame(np.zeros(2), ["x1", "x2"]), frame(baseline_values()), ["m"], SETTINGS)
    assert not verdict.failed and verdict.n_shared == 0 and verdict.metrics[0].n_paired == 0
    assert verdict.describe() == "no question in common with the baseline: nothing to compare"
