"""The Pareto front of the objective against a cost: only ranked setups compete, cheapest first, and
every setup off the front is beaten by one on it."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.leaderboard.pareto import (
    ON_FRONT,
    cost_column,
    front_rows,
    mark_front,
    pareto_front,
)
from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames, rank_board
from rag_eval_pipeline.core.leaderboard.render_pareto import format_pareto
from rag_eval_pipeline_tests.core.leaderboard.test_ranking import scored

CONFIGURED = ConfiguredNames(frozenset({"fixed", "recursive", "semantic"}), frozenset({"top2", "top4"}))


def test_the_front_is_the_points_no_other_beats_on_both() -> None:
    points = [(0.82, 0.31), (0.74, 0.27), (0.91, 0.18), (0.88, 0.15), (0.91, 0.10), (0.5, 0.31)]
    assert pareto_front(points) == {0, 2}
    assert pareto_front([(0.5, 0.5), (0.5, 0.5)]) == {0, 1}  # ties beat neither
    assert pareto_front([]) == set()


def costed(chunk_config: str, profile: str, recall: float, tokens: float, p95: float) -> dict[str, object]:
    return scored(chunk_config, profile, recall, tokens) | {"latency_p95_ms": p95}


def board(*rows: dict[str, object]) -> pd.DataFrame:
    return rank_board(pd.DataFrame(list(rows)), CONFIGURED)


def test_the_front_lists_the_ranked_setups_cheapest_first_with_what_each_step_buys() -> None:
    frame = board(
        costed("fixed", "top2", 0.60, 300, 2.0),
        costed("fixed", "top4", 0.80, 900, 3.0),
        costed("recursive", "top2", 0.70, 950, 1.0),  # dominated on context by fixed x top4
        costed("semantic", "top4", 0.85, 2000, 9.0),
        costed("semantic", "top2", 0.85, 2500, 12.0),  # as good as semantic x top4, dearer on both
    )
    steps = front_rows(frame)
    assert [(s.row["chunk_config"], s.row["profile"]) for s in steps] == [
        ("fixed", "top2"),
        ("fixed", "top4"),
        ("semantic", "top4"),
    ]
    assert [s.gain for s in steps][1:] == pytest.approx([0.2, 0.05])
    assert [s.extra_cost for s in steps] == [None, 600, 1100]
    # on latency, recursive x top2 is the cheapest: another front
    latency = front_rows(frame, "latency_p95_ms")
    assert [(s.row["chunk_config"], s.row["profile"]) for s in latency] == [
        ("recursive", "top2"),
        ("fixed", "top4"),
        ("semantic", "top4"),
    ]
    marked = mark_front(frame).set_index(["chunk_config", "profile"])[ON_FRONT]
    assert marked[("fixed", "top4")] == True and marked[("recursive", "top2")] == False  # noqa: E712


def test_only_ranked_rows_compete_and_unknown_costs_are_left_out() -> None:
    removed = scored("fixed", "old", 0.99, 100) | {"latency_p95_ms": 1.0}  # would beat everything
    other_questions = costed("recursive", "top4", 0.95, 150, 1.0) | {"dataset_sha256": "d2"}
    rows = [costed("fixed", "top2", 0.6, 300, 2.0), costed("fixed", "top4", 0.8, 900, 3.0)]
    unmeasured = scored("semantic", "top2", 0.9, None)
    frame = board(*rows, removed, other_questions, unmeasured)
    assert [(s.row["chunk_config"], s.row["profile"]) for s in front_rows(frame)] == [
        ("fixed", "top2"),
        ("fixed", "top4"),
    ]
    marked = mark_front(frame).set_index(["chunk_config", "profile"])[ON_FRONT]
    assert pd.isna(marked[("fixed", "old")]) and pd.isna(marked[("recursive", "top4")])
    assert pd.isna(marked[("semantic", "top2")])  # ranked, but its context was not measured


def test_an_unknown_cost_axis_is_refused_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown cost axis 'price'; one of context_tokens, latency_p50_ms"):
        cost_column("price")


def test_the_terminal_view_of_the_front() -> None:
    frame = board(costed("fixed", "top2", 0.6, 300, 2.0), costed("fixed", "top4", 0.8, 900, 3.0))
    lines = format_pareto(frame, "context_tokens").splitlines()
    assert lines[0] == (
        "Pareto front of span_recall_1000t against context_tokens: 2 of 2 ranked setups (no other ranked "
        "setup gives as much span_recall_1000t for less context_tokens), cheapest first"
    )
    assert lines[2].split()[:6] == ["context_tokens", "span_recall_1000t", "tier", "setup", "step", "up"]
    assert lines[4].startswith("300 ") and "fixed x top2" in lines[4] and "cheapest" in lines[4]
    assert lines[5].startswith("900 ") and "+0.200 for +600" in lines[5] and "3 ms" in lines[5]
    none = format_pareto(board(scored("fixed", "top2", 0.6, None)), "context_tokens")
    assert none.startswith("No Pareto front of span_recall_1000t against context_tokens")


points = st.lists(
    st.tuples(st.integers(0, 20).map(lambda v: v / 20), st.integers(1, 30).map(float)),
    min_size=1,
    max_size=12,
)


@given(points)
def test_every_setup_off_the_front_is_beaten_by_one_on_it(values: list[tuple[float, float]]) -> None:
    configs = ["fixed", "recursive", "semantic"]
    rows = [
        costed(configs[i % 3], f"top{i}", quality, tokens, 1.0) for i, (quality, tokens) in enumerate(values)
    ]
    configured = ConfiguredNames(frozenset(configs), frozenset(f"top{i}" for i in range(len(rows))))
    frame = rank_board(pd.DataFrame(rows), configured)
    front = front_rows(frame)
    on = {(s.row["chunk_config"], s.row["profile"]) for s in front}

    def beats(a: pd.Series, b: pd.Series) -> bool:
        qa, qb = a["span_recall_1000t_mean"], b["span_recall_1000t_mean"]
        ca, cb = a["context_tokens_mean"], b["context_tokens_mean"]
        return qa >= qb and ca <= cb and (qa > qb or ca < cb)

    all_rows = [r for _, r in frame.iterrows()]
    for r in all_rows:
        beaten = any(beats(o, r) for o in all_rows)
        assert ((r["chunk_config"], r["profile"]) in on) == (not beaten)
    costs = [s.cost for s in front]
    assert costs == sorted(costs)  # cheapest first, and along the front quality rises with the cost
    assert [s.quality for s in front] == sorted(s.quality for s in front)
