"""Statistical tiers: a clearly better setup stands alone in tier 1, identical setups are tied, Holm's
correction changes a borderline case, and the same values always give the same tiers. The test's
p-values are checked against scipy's permutation test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rag_eval_pipeline.core.leaderboard.tiers import holm_adjusted, sign_flip_p_values, statistical_tiers

QUESTIONS = [f"q{i}" for i in range(60)]


def setup(values: list[float] | np.ndarray, questions: list[str] = QUESTIONS) -> pd.Series:
    return pd.Series(np.asarray(values, dtype=np.float64), index=questions)


def noisy(seed: int, shift: float) -> pd.Series:
    """Span-recall-like values: per-question difficulty shared by every setup, a setup's own noise."""
    difficulty = np.random.default_rng(0).random(len(QUESTIONS))
    own = np.random.default_rng(seed).normal(0, 0.05, len(QUESTIONS))
    return setup(np.clip(difficulty + own + shift, 0, 1))


def test_a_clearly_better_setup_is_alone_in_tier_1() -> None:
    verdicts = statistical_tiers([noisy(1, 0.3), noisy(2, 0.0), noisy(3, -0.002)])
    assert [v.tier for v in verdicts] == [1, 2, 2]
    assert np.isnan(verdicts[0].p_value) and np.isnan(verdicts[1].p_value)  # each tier's best
    assert verdicts[2].p_value > 0.05 and verdicts[0].n_paired == 60


def test_identical_setups_are_tied_with_p_1() -> None:
    values = noisy(1, 0.0)
    verdicts = statistical_tiers([values, values.copy(), values.sample(frac=1.0, random_state=3)])
    assert [v.tier for v in verdicts] == [1, 1, 1]
    assert [v.p_value for v in verdicts[1:]] == [1.0, 1.0]  # paired by question id, not by position


def test_holm_keeps_a_borderline_setup_tied_that_no_correction_would_separate() -> None:
    # six questions the best finds and the challenger misses: exact p = 2 / 2^6 = 0.03125 < 0.05, but
    # with a second comparison in the family Holm doubles the smallest p: 0.0625 > 0.05
    best = setup([1.0] * 6 + [0.5] * 54)
    challenger = setup([0.0] * 6 + [0.5] * 54)
    verdicts = {
        correction: statistical_tiers([best, best.copy(), challenger], correction=correction)
        for correction in ("holm", "none")
    }
    assert [v.tier for v in verdicts["none"]] == [1, 1, 2]
    assert verdicts["none"][2].tier == 2 and sign_flip_p_values((best - challenger).to_numpy()[:, None]) == [
        pytest.approx(0.03125)
    ]
    assert [v.tier for v in verdicts["holm"]] == [1, 1, 1]
    assert verdicts["holm"][2].p_value == pytest.approx(0.0625)


def test_holm_adjusted_p_values_step_down_and_stay_monotone() -> None:
    # sorted 0.01, 0.02, 0.04, 0.5 with m = 4: 0.04, max(0.04, 0.06), max(0.06, 0.08), max(0.08, 0.5)
    assert holm_adjusted([0.04, 0.5, 0.01, 0.02]) == pytest.approx([0.08, 0.5, 0.04, 0.06])
    assert holm_adjusted([0.3, 0.9]) == pytest.approx([0.6, 0.9])
    assert holm_adjusted([]) == []


def test_the_same_values_give_the_same_tiers_and_p_values_run_after_run() -> None:
    values = [noisy(seed, -0.004 * seed) for seed in range(1, 7)]
    first = statistical_tiers(values)
    assert statistical_tiers(values) == first
    # a comparison's p-value depends on its own two setups only, not on the others in the family
    alone = statistical_tiers(values[:2], correction="none")
    among = statistical_tiers(values, correction="none")
    assert alone[1].p_value == among[1].p_value


@pytest.mark.parametrize("n", [9, 13])
def test_exact_p_values_match_scipys_paired_permutation_test(n: int) -> None:
    rng = np.random.default_rng(n)
    x, y = rng.random(n), rng.random(n)
    expected = stats.permutation_test(
        (x, y),
        lambda a, b: np.mean(a - b),
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=np.inf,
    ).pvalue
    assert sign_flip_p_values((x - y)[:, None]) == [pytest.approx(expected)]


def test_drawn_p_values_are_close_to_the_exact_ones() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.random(16), rng.random(16) + 0.15  # 2^16 sign vectors: more than drawn
    exact = stats.permutation_test(
        (x, y), lambda a, b: np.mean(a - b), permutation_type="samples", n_resamples=np.inf
    ).pvalue
    (drawn,) = sign_flip_p_values((x - y)[:, None])
    assert drawn == pytest.approx(exact, abs=0.01) and drawn > 0


def test_questions_missing_from_one_setup_are_left_out_of_its_pairs() -> None:
    best = setup([1.0] * 60)
    partial = setup([1.0] * 30, QUESTIONS[:30])  # the same where it was evaluated
    first, second = statistical_tiers([best, partial])
    assert (first.tier, first.n_paired) == (1, 60)
    assert (second.tier, second.p_value, second.n_paired) == (1, 1.0, 30)
    assert statistical_tiers([]) == []
    with pytest.raises(ValueError, match="alpha"):
        statistical_tiers([best], alpha=0)
