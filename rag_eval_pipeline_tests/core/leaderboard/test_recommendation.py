"""The recommendation at the top of every view: the best ranked setup, the setups tied with it (tier 1,
with the test that says so), the trade-off against the next cheaper tied setup, what the questions were,
the objective (and its fallback), and boards that cannot recommend anything."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames, rank_board
from rag_eval_pipeline.core.leaderboard.recommendation import (
    KNOWN_ITEM_WARNING,
    recommend,
    recommendation_html,
)
from rag_eval_pipeline.core.leaderboard.render_html import render_report
from rag_eval_pipeline.core.leaderboard.render_markdown import recommendation_markdown
from rag_eval_pipeline.core.leaderboard.render_text import format_leaderboard, format_recommendation
from rag_eval_pipeline.core.leaderboard.view import board_facts
from rag_eval_pipeline.core.metrics.names import HEADLINE_METRICS
from rag_eval_pipeline.core.store.table_upgrades import upgrade_leaderboard
from rag_eval_pipeline_tests.chromium import parse_dom
from rag_eval_pipeline_tests.core.leaderboard.boards import NOW
from rag_eval_pipeline_tests.core.leaderboard.test_ranking import row

CONFIGURED = ConfiguredNames(frozenset({"fixed", "recursive", "semantic"}), frozenset({"top2", "top4"}))
QUESTIONS = [f"q{i}" for i in range(40)]
TIED = "paired sign-flip permutation test, two-sided, Holm, alpha 0.05"


def setup(
    chunk_config: str, profile: str, found: int, tokens: float | None, **extra: object
) -> dict[str, object]:
    """A row whose span_recall_1000t is ``found`` of the 40 questions (1 each, else 0)."""
    recall = found / len(QUESTIONS)
    return row(chunk_config, profile, 0.1, n=40) | {
        "span_recall_1000t_mean": recall,
        "span_recall_1000t_ci_low": recall - 0.1,
        "span_recall_1000t_ci_high": recall + 0.1,
        "context_tokens_mean": float("nan") if tokens is None else tokens,
        "question_generators": "provided",
        "top_k": 2,
        **extra,
    }


def board(*rows: dict[str, object]) -> pd.DataFrame:
    """Ranked with per-question values: each row finds its first ``found`` questions."""
    questions = {
        (str(r["chunk_config"]), str(r["profile"])): pd.DataFrame(
            {
                "question_id": QUESTIONS,
                "span_recall_1000t": [
                    1.0 if i < round(float(r["span_recall_1000t_mean"]) * 40) else 0.0  # type: ignore[arg-type]
                    for i in range(40)
                ],
            }
        )
        for r in rows
    }
    return rank_board(pd.DataFrame(list(rows)), CONFIGURED, questions=questions)


def details(frame: pd.DataFrame) -> dict[str, str]:
    return dict(recommend(frame).details)


def test_the_best_setup_its_tied_setups_and_the_next_cheaper_one_among_them() -> None:
    frame = board(
        setup("fixed", "top4", 36, tokens=1800),
        setup("fixed", "top2", 35, tokens=900),  # tied, the next cheaper
        setup("semantic", "top2", 34, tokens=400),  # tied, cheaper still
        setup("recursive", "top2", 4, tokens=300),  # clearly worse
    )
    recommendation = recommend(frame)
    assert (
        recommendation.headline
        == "Recommended: fixed x top4, span_recall_1000t 0.900 [0.80-1.00] on 40 questions"
    )
    said = dict(recommendation.details)
    assert said["tier 1"] == (
        f"these 3 setups are statistically tied on span_recall_1000t ({TIED}): fixed x top4, fixed x top2, "
        "semantic x top2"
    )
    assert said["cheaper"] == (
        "fixed x top2 (tied) gives the generator 900 fewer context tokens per question (900 vs 1,800) for "
        "0.025 less span_recall_1000t (0.875 vs 0.900); the cheapest tied setup, semantic x top2, gives the "
        "generator 1,400 fewer context tokens per question (400 vs 1,800) for 0.050 less span_recall_1000t "
        "(0.850 vs 0.900)"
    )
    assert said["questions"] == "40 questions from provided"
    assert said["ranked by"].startswith(
        "span_recall_1000t, span recall within the first 1,000 tokens of each setup's ranked chunks"
    )
    assert "not ranked" not in said
    # the Pareto front of recall against context: semantic x top2 (cheapest), fixed x top2, fixed x top4;
    # recursive x top2 is cheaper still and on it too (nothing is cheaper), however bad
    assert said["front"].startswith(
        "4 of 4 ranked setups are on the Pareto front of span_recall_1000t against context tokens (no other "
        "gives as much for less), cheapest first: recursive x top2 (300 tokens, 0.100), semantic x top2 "
        "(400 tokens, 0.850), fixed x top2 (900 tokens, 0.875), fixed x top4 (1,800 tokens, 0.900)"
    )
    assert said["cost"] == "1,800 context tokens a question"


def test_the_recommended_setups_costs_are_said_with_their_assumptions() -> None:
    costs = {
        "latency_p50_ms": 2.5,
        "latency_p95_ms": 4.25,
        "usd_per_1k_questions": 0.3125,
        "index_bytes": 2_500_000.0,
        "index_usd": 0.0,
        "cost_basis": "generator gpt-4o-mini ($0.15/$0.6 per million input/output tokens), 200-token answers",
    }
    frame = board(
        setup("fixed", "top4", 36, tokens=1800, **costs),
        setup("fixed", "top2", 35, tokens=900, **{**costs, "usd_per_1k_questions": 0.1875}),
        setup("semantic", "top2", 36, tokens=2000, **costs),  # as good as the best, dearer: off the front
    )
    said = details(frame)
    assert said["cost"] == (
        "1,800 context tokens a question, search p50 2.5 ms, p95 4.2 ms, $0.312 per 1,000 questions "
        "(generator gpt-4o-mini ($0.15/$0.6 per million input/output tokens), 200-token answers), index "
        "2.5 MB, embedding it $0"
    )
    assert said["cheaper"].startswith(
        "fixed x top2 (tied) gives the generator 900 fewer context tokens per question (900 vs 1,800; "
        "$0.188 vs $0.312 per 1,000 questions) for 0.025 less"
    )
    assert "semantic x top2" not in said["front"] and said["front"].startswith("2 of 3 ranked setups")


def test_a_setup_alone_in_tier_1_names_the_runner_up_and_has_no_trade_off() -> None:
    frame = board(setup("fixed", "top4", 38, tokens=1800), setup("fixed", "top2", 6, tokens=900))
    said = details(frame)
    assert said["tier 1"] == (
        f"alone: every other setup is significantly worse on span_recall_1000t ({TIED}); the next best, "
        "fixed x top2, scores 0.150"
    )
    assert "cheaper" not in said


def test_the_cheapest_of_its_tier_or_an_unmeasured_context_says_so() -> None:
    cheapest = board(setup("fixed", "top4", 36, tokens=500), setup("fixed", "top2", 35, tokens=900))
    assert (
        details(cheapest)["cheaper"]
        == "none: the recommended setup has the smallest context of its tier (500 tokens)"
    )
    unmeasured = board(setup("fixed", "top4", 36, tokens=None), setup("fixed", "top2", 35, tokens=None))
    assert details(unmeasured)["cheaper"].startswith(
        "unknown: the context size (context_tokens) was not measured"
    )


def test_known_item_questions_and_unranked_rows_are_said() -> None:
    frame = board(
        setup("fixed", "top4", 36, tokens=500, question_generators="known-item-simulation"),
        # on other questions, evaluated earlier: not ranked
        setup(
            "fixed", "top2", 30, tokens=500, dataset_sha256="d2", metrics_created_at=NOW - timedelta(days=1)
        ),
        setup("gone", "top2", 40, tokens=500),  # removed
    )
    said = details(frame)
    assert said["questions"] == f"40 questions from known-item-simulation; WARNING: {KNOWN_ITEM_WARNING}"
    assert said["not ranked"] == "1 not comparable (rank *), 1 removed (rank -)"
    assert said["tier 1"] == "the only ranked setup"


def test_the_fallback_objective_is_said_where_the_ranking_is_explained() -> None:
    old = [setup("fixed", "top4", 0, tokens=None), setup("fixed", "top2", 0, tokens=None)]
    frame = rank_board(
        pd.DataFrame(old).drop(columns=["span_recall_1000t_mean"]).assign(span_recall_mean=[0.7, 0.4]),
        CONFIGURED,
    )
    recommendation = recommend(frame)
    assert recommendation.headline.startswith("Recommended: fixed x top4, span_recall 0.700 on 40 questions")
    said = dict(recommendation.details)
    assert said["ranked by"].startswith("span_recall, span recall over each setup's k chunks; set in")
    assert "ranked by span_recall over each setup's k chunks, not by span_recall_1000t" in said["ranked by"]
    assert said["tier 1"] == "not computed (a board built without per-question metrics)"


def test_boards_that_cannot_recommend_say_why() -> None:
    nothing = board(setup("gone", "top2", 40, tokens=500))
    assert recommend(nothing).headline == "No recommendation: no setup is ranked"
    assert details(nothing)["not ranked"] == "1 removed (rank -)"
    # a board from before, as the warehouse reads it
    before = upgrade_leaderboard(pd.DataFrame([{"rank": 1, "chunk_config": "fixed", "profile": "top2"}]))
    assert recommend(before).headline.startswith("Best by span IoU: fixed x top2 (a leaderboard built before")


def test_every_view_shows_the_recommendation_first() -> None:
    frame = board(setup("fixed", "top4", 36, tokens=1800), setup("fixed", "top2", 35, tokens=900))
    frame = frame.assign(
        profile=["top4 <b>", "top2"],
        **{f"{m}_{part}": 0.5 for m in HEADLINE_METRICS for part in ("mean", "ci_low", "ci_high")},
    )
    text = format_recommendation(frame)
    assert format_leaderboard(frame).startswith(text + "\n\n")
    assert text.splitlines()[1] == f"  tier 1:    {details(frame)['tier 1']}"  # labels padded to the widest
    markdown = recommendation_markdown(frame).splitlines()
    assert markdown[0] == f"**{recommend(frame).headline}**" and markdown[2].startswith(
        "- **tier 1**: these 2"
    )
    dom = parse_dom(render_report(frame.assign(run_id="r"), pd.DataFrame(), generated_at=NOW))
    section = dom.find("section", id="recommendation")
    assert section.find("p", class_="recommended").text() == recommend(frame).headline  # escaped, shown as is
    assert [li.attrs["data-detail"] for li in section.find_all("li")] == [
        "tier 1",
        "power",
        "cheaper",
        "cost",
        "front",
        "questions",
        "ranked by",
    ]
    assert "<b>" not in recommendation_html(frame)


def test_the_power_line_says_what_the_questions_can_detect_with_known_numbers() -> None:
    """The best finds 36 of 40 questions, the next 35 (one question apart: d is 1 once, 0 39 times, so
    mean 0.025 and sd sqrt(0.975 / 39) = 0.158), a third 10 (outside tier 1): alpha is not shared.
    MDD = sd / sqrt(40) x (c + z(0.8) sqrt(1 + c^2 / 78)), c = 1.96 sqrt(39 / (40 - 1.96^2)) = 2.0355:
    0.025 x (2.0355 + 0.8416 x 1.0262) = 0.0725; at a difference of 0.025, 317 questions (power.py)."""
    frame = board(
        setup("fixed", "top2", 36, tokens=900),
        setup("fixed", "top4", 35, tokens=1800),
        setup("recursive", "top2", 10, tokens=700),
    )
    assert details(frame)["power"] == (
        "40 questions detect a difference of 0.072 in span_recall_1000t between the best and the next "
        "(fixed x top4) at 80 % power (sd of their per-question differences 0.158; two-sided, alpha 0.05); "
        "separating the other tier-1 setup from the best at its observed difference would need about 320 "
        "questions (fixed x top4, 0.025 below the best)"
    )
    assert list(details(frame))[:2] == ["tier 1", "power"]  # said right under the tie it qualifies
    facts = board_facts(frame)
    assert facts["power_detectable_difference"] == pytest.approx(0.07248, abs=1e-5)
    assert facts["power_questions_to_separate_tier_1"] == 317
    # the same line in the asset's markdown and the report
    assert f"- **power**: {details(frame)['power']}" in recommendation_markdown(frame)
    assert 'data-detail="power"' in recommendation_html(frame)


def test_the_power_line_when_tier_1_is_alone_shared_or_tied_exactly() -> None:
    alone = board(setup("fixed", "top2", 36, tokens=900), setup("fixed", "top4", 20, tokens=1800))
    assert details(alone)["power"].endswith(
        "two-sided, alpha 0.05); the best is alone in tier 1: these questions already separate it from every "
        "other setup"
    )
    assert "power_questions_to_separate_tier_1" not in board_facts(alone)
    # the next scores like the best on every question: the difference is sized on the next that differs;
    # three tier-1 setups share alpha (Holm: 0.05/2)
    shared = board(
        setup("fixed", "top2", 36, tokens=900),
        setup("fixed", "top4", 36, tokens=1800),
        setup("recursive", "top2", 35, tokens=700),
    )
    line = details(shared)["power"]
    assert "between the best and the next that differs from it on some question (recursive x top2)" in line
    assert "alpha 0.05/2: Holm over the 2 setups tied with the best" in line
    assert "would need about 390 questions (recursive x top2, 0.025 below the best)" in line
    assert line.endswith(
        "fixed x top4 has the best's mean span_recall_1000t: no number of questions separates it from the best"
    )
    assert "power_questions_to_separate_tier_1" not in board_facts(shared)  # none would for fixed x top4
    # a board built before the power figures: no line
    assert "power" not in details(shared.drop(columns=["power_comparisons"]))
