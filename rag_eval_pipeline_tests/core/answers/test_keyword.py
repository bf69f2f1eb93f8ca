"""Keyword correctness: all keywords, whole tokens, formatting-insensitive, no floor."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.answers.keyword import contains_tokens, keyword_outcome, match_tokens
from rag_eval_pipeline.core.answers.types import MetricOutcome


@pytest.mark.parametrize(
    ("answer", "keywords", "value"),
    [
        ("The SLA guarantees 99.95 % uptime.", ("99.95%",), 1.0),
        ("Zoe Mbeki leads the night shift.", ("Zoë Mbeki",), 1.0),
        ("ZOË MBEKI.", ("zoe mbeki",), 1.0),
        ("It runs on the night-shift.", ("night shift",), 1.0),
        ("ﬁve pumps", ("five",), 1.0),  # NFKD unfolds the ligature
        ("Straße 5", ("STRASSE",), 1.0),  # casefold, not lower
        ("Herons nest here.", ("Heron",), 0.0),  # whole tokens, no stemming
        ("The heron nests.", ("Heron",), 1.0),
        ("The main pump runs at 1450 rpm.", ("1,450 rpm",), 0.0),  # number formats are not unified
        ("The main pump runs at 1,450 rpm.", ("1.450 rpm",), 1.0),
        ("Paris", ("Paris", "France"), 0.0),  # every keyword must occur
        ("Paris, France", ("france", "paris"), 1.0),
        ("shift night", ("night shift",), 0.0),  # a phrase is a contiguous run, in order
    ],
)
def test_keyword_matching(answer: str, keywords: tuple[str, ...], value: float):
    outcome = keyword_outcome(answer, keywords)
    assert outcome.status == "ok"
    assert outcome.value == value


def test_no_floor_for_wrong_answers_or_abstentions():
    keywords = ("Paris",)
    assert keyword_outcome("I don't know.", keywords).value == 0.0
    assert keyword_outcome("The capital of France is Lyon.", keywords).value == 0.0
    assert keyword_outcome("", keywords).value == 0.0


def test_detail_lists_the_missing_keywords():
    outcome = keyword_outcome("Zoë Mbeki leads it.", ("Zoë Mbeki", "22:00", "06:00"))
    assert outcome == MetricOutcome.ok(0.0, "missing: '22:00', '06:00'")
    assert keyword_outcome("From 22:00 to 06:00", ("22:00", "06:00")).detail == "all 2 keywords found"


def test_no_keywords_is_skipped_and_an_unmatchable_keyword_is_an_error():
    assert keyword_outcome("anything", ()) == MetricOutcome.skipped("no expected keywords")
    with pytest.raises(ValueError, match="'%' has no letter or digit"):
        keyword_outcome("99 %", ("99", "%"))


def test_tokens():
    assert match_tokens("Amélie's 7.5-bar alarm!") == ("amelie", "s", "7", "5", "bar", "alarm")
    assert contains_tokens(("a", "b", "c"), ("b", "c"))
    assert not contains_tokens(("a", "b"), ("b", "c"))
    assert not contains_tokens(("a",), ())
