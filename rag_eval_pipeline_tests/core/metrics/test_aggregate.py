"""Aggregates: exact mean/std, a sane and reproducible bootstrap CI, group breakdowns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_eval_pipeline.core.metrics import (
    MetricSummary,
    aggregate,
    summarize,
    summarize_by_group,
    summarize_table,
)
from rag_eval_pipeline.core.metrics.aggregate import summary_columns


def test_known_mean_sample_std_and_population_std() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0], "recall")
    assert (s.name, s.n) == ("recall", 4)
    assert s.mean == pytest.approx(2.5)
    assert s.std == pytest.approx(math.sqrt(5 / 3))  # sample: squared deviations / (n - 1)
    assert s.std_population == pytest.approx(math.sqrt(5 / 4))  # population: / n, as np.std and Chroma
    assert s.std_population == pytest.approx(float(np.std([1.0, 2.0, 3.0, 4.0])))
    assert 1.0 <= s.ci_low <= s.mean <= s.ci_high <= 4.0


def test_single_value_and_empty_input() -> None:
    assert summarize([0.7], "x") == MetricSummary("x", 0.7, 0.0, 0.7, 0.7, 1, 0.0)
    empty = summarize([], "x")
    assert empty.n == 0
    assert all(
        math.isnan(v) for v in (empty.mean, empty.std, empty.ci_low, empty.ci_high, empty.std_population)
    )


def test_constant_values_give_a_degenerate_interval() -> None:
    s = summarize([0.25] * 10, "x")
    assert (s.std, s.ci_low, s.ci_high) == (0.0, 0.25, 0.25)


def test_interval_contains_mean_and_narrows_with_n() -> None:
    rng = np.random.default_rng(42)
    small = summarize(rng.uniform(size=20).tolist(), "x")
    large = summarize(rng.uniform(size=2000).tolist(), "x")
    for s in (small, large):
        assert s.ci_low < s.mean < s.ci_high
    assert large.ci_high - large.ci_low < (small.ci_high - small.ci_low) / 3


def test_interval_is_close_to_the_normal_approximation() -> None:
    values = np.random.default_rng(5).normal(size=400)
    s = summarize(values.tolist(), "x", n_resamples=4000)
    half_width = 1.96 * s.std / math.sqrt(s.n)
    assert s.ci_low == pytest.approx(s.mean - half_width, abs=0.1 * half_width)
    assert s.ci_high == pytest.approx(s.mean + half_width, abs=0.1 * half_width)


def test_deterministic_for_a_seed_and_seed_sensitive() -> None:
    values = np.random.default_rng(1).uniform(size=50).tolist()
    assert summarize(values, "x", seed=3) == summarize(values, "x", seed=3)
    assert summarize(values, "x", seed=3) != summarize(values, "x", seed=4)


def test_large_input_is_resampled_in_batches_deterministically() -> None:
    values = np.random.default_rng(2).uniform(size=20_000).tolist()
    first = summarize(values, "x", n_resamples=500)
    assert first == summarize(values, "x", n_resamples=500)
    assert first.ci_low < first.mean < first.ci_high


@pytest.mark.parametrize(
    ("cells", "n_rows"),
    [(4_000_000, 37), (4_000_000, 2), (4_000_000, 3), (4_000_000, 85), (5_000, 37)],
    ids=["all metrics at once", "two rows", "three rows", "a demo partition", "drawn per metric in batches"],
)
def test_a_tables_metrics_are_summarized_exactly_as_each_alone(
    cells: int, n_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table draws its resamples once and summarizes every metric together (or, past the bound, each
    metric its own in batches): every summary is the one ``summarize`` gives that metric alone, to the
    last bit."""
    monkeypatch.setattr(aggregate, "_MAX_BATCH_CELLS", cells)
    rng = np.random.default_rng(5)
    names = ["recall", "hit", "iou", "constant", *(f"m{i}" for i in range(12))]
    rows: list[dict[str, float | str]] = [
        {
            "recall": float(rng.uniform()),
            "hit": float(rng.integers(0, 2)),
            "iou": float(rng.uniform()),
            "constant": 0.1,
            **{f"m{i}": float(rng.uniform() ** (i + 1)) for i in range(12)},
        }
        for _ in range(n_rows)
    ]
    table = summarize_table(rows, names, n_resamples=300 if n_rows == 37 else 1000, seed=2)
    assert list(table) == names
    for name in names:
        alone = summarize(
            [float(row[name]) for row in rows], name, n_resamples=300 if n_rows == 37 else 1000, seed=2
        )
        assert table[name] == alone, name


def test_a_tables_non_finite_value_names_its_metric() -> None:
    rows: list[dict[str, float | str]] = [{"a": 0.1, "b": 0.2}, {"a": 0.3, "b": math.inf}]
    with pytest.raises(ValueError, match="metric 'b' has non-finite values"):
        summarize_table(rows, ["a", "b"])
    with pytest.raises(ValueError, match="confidence"):
        summarize_table(rows, ["a"], confidence=0.0)


def test_invalid_input() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        summarize([0.1, math.nan], "x")
    with pytest.raises(ValueError, match="confidence"):
        summarize([0.1], "x", confidence=1.0)


ROWS: list[dict[str, float | str]] = [
    {"group": "legal", "recall": 1.0, "iou": 0.5},
    {"group": "faq", "recall": 0.0, "iou": 0.1},
    {"group": "legal", "recall": 0.5, "iou": 0.3},
    {"group": "faq", "recall": 1.0, "iou": 0.3},
    {"group": "faq", "recall": 0.5, "iou": 0.2},
]


def test_table_summarizes_each_metric_in_the_order_given() -> None:
    table = summarize_table(ROWS, ["recall", "iou"])
    assert list(table) == ["recall", "iou"]
    assert table["recall"].mean == pytest.approx(0.6)
    assert table["iou"].n == 5
    assert table["iou"] == summarize([0.5, 0.1, 0.3, 0.3, 0.2], "iou")
    with pytest.raises(ValueError, match="no value for metric 'mrr'"):
        summarize_table(ROWS, ["mrr"])


def test_group_breakdown() -> None:
    groups = summarize_by_group(ROWS, "group", ["recall", "iou"])
    assert list(groups) == ["faq", "legal"]
    assert groups["faq"]["recall"].mean == pytest.approx(0.5)
    assert groups["faq"]["recall"].n == 3
    assert groups["legal"]["iou"].mean == pytest.approx(0.4)
    assert groups["legal"]["iou"].std == pytest.approx(math.sqrt(0.02))
    with pytest.raises(ValueError, match="group key"):
        summarize_by_group(ROWS, "folder", ["recall"])


def test_summary_columns_hold_both_standard_deviations() -> None:
    s = summarize([0.0, 1.0], "span_iou")
    assert summary_columns({"span_iou": s}) == {
        "span_iou_mean": 0.5,
        "span_iou_std": pytest.approx(math.sqrt(0.5)),
        "span_iou_std_pop": 0.5,
        "span_iou_ci_low": s.ci_low,
        "span_iou_ci_high": s.ci_high,
    }


def test_resamples_of_one_size_are_drawn_once_a_process_and_kept_read_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sample's resamples depend on its size, the resample count and the seed alone: a second table of
    that size reuses the counts drawn for the first (kept read-only), with the summaries a fresh draw gives."""
    aggregate._kept_counts.cache_clear()
    draws: list[int] = []
    default_rng = np.random.default_rng

    def counting_rng(seed: int) -> np.random.Generator:
        draws.append(seed)
        return default_rng(seed)

    monkeypatch.setattr(aggregate.np.random, "default_rng", counting_rng)
    rng = default_rng(3)
    first = [{"a": float(v)} for v in rng.uniform(size=40)]
    second = [{"a": float(v)} for v in rng.uniform(size=40)]
    kept = [summarize_table(first, ["a"], seed=7), summarize_table(second, ["a"], seed=7)]
    assert draws == [7]  # the second table drew nothing
    aggregate._kept_counts.cache_clear()
    assert summarize_table(second, ["a"], seed=7) == kept[1]  # as drawn afresh
    counts = aggregate._kept_counts(40, 1000, 7)
    with pytest.raises(ValueError, match="read-only"):
        counts[0, 0] = 2.0
