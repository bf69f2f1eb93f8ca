from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.generation.terms import (
    STOPWORDS,
    TermStatistics,
    content_terms,
    document_frequencies,
    salient_terms,
    tokenize,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The main pump runs at 1,450 rpm.", ["the", "main", "pump", "runs", "at", "1,450", "rpm"]),
        (
            "exceeds 7.5 bar; starts at 22:00, ends at 06:00.",
            ["exceeds", "7.5", "bar", "starts", "at", "22:00", "ends", "at", "06:00"],
        ),
        (
            "Valve V-12 feeds kst-prod-eu1 (INC-2021-007).",
            ["valve", "v-12", "feeds", "kst-prod-eu1", "inc-2021-007"],
        ),
        ("set `checkpoint_interval_s: 1` in 2021.", ["set", "checkpoint_interval_s", "1", "in", "2021"]),
        ("red, green: blue", ["red", "green", "blue"]),
        ("**Zoë** and cafe\u0301", ["zoë", "and", "café"]),
    ],
)
def test_tokenize_keeps_numbers_and_identifiers_whole(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


words = st.sampled_from(["pump", "Valve", "the", "and", "Heron", "shift", "of"])
numbers = st.one_of(
    st.integers(1000, 10**7).map(lambda n: f"{n:,}"),
    st.tuples(st.integers(0, 999), st.integers(0, 99)).map(lambda t: f"{t[0]}.{t[1]}"),
    st.tuples(st.integers(0, 23), st.integers(0, 59)).map(lambda t: f"{t[0]:02d}:{t[1]:02d}"),
    st.tuples(st.sampled_from("VKX"), st.integers(0, 99)).map(lambda t: f"{t[0]}-{t[1]}"),
)


@settings(max_examples=60, deadline=None)
@given(before=st.lists(words, max_size=5), number=numbers, after=st.lists(words, max_size=5))
def test_a_number_or_identifier_in_prose_is_one_token(
    before: list[str], number: str, after: list[str]
) -> None:
    text = " ".join(before) + " " + number + ", " + " ".join(after) + "."
    assert number.lower() in tokenize(text)
    assert number.lower() in salient_terms(text)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=120))
def test_content_terms_are_lowercase_non_stopword_tokens(text: str) -> None:
    terms = content_terms(text)
    assert terms == [t for t in tokenize(text) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]
    assert all(not any(ch.isspace() for ch in t) for t in terms)


def test_stopwords_are_dropped_but_meaningful_words_kept() -> None:
    assert content_terms("The primary must acknowledge a page within 5 minutes") == [
        "primary",
        "acknowledge",
        "page",
        "5",
        "minutes",
    ]


def test_salient_terms_are_numbers_identifiers_and_names_not_sentence_openers() -> None:
    text = "Night shift is led by Zoë Mbeki. Night shift starts at 22:00 on Heron host V-12 with TLS."
    salient = salient_terms(text)
    assert {"mbeki", "zoë", "22:00", "heron", "v-12", "tls"} <= set(salient)
    assert "night" not in salient  # capitalised only because it opens a sentence
    assert "shift" not in salient


def test_idf_is_smoothed_and_falls_with_document_frequency() -> None:
    stats = TermStatistics.from_texts(["pump pump valve", "pump alarm", "pump"])
    assert stats.n_texts == 3
    assert stats.document_frequency["pump"] == 3  # once per text, however often inside it
    assert stats.collection_frequency["pump"] == 4
    assert stats.idf("pump") < stats.idf("valve") < stats.idf("never-seen")
    assert stats.idf("pump") > 0  # a term in every text still weighs a little
    assert stats.vocabulary() == ["alarm", "pump", "valve"]
    assert document_frequencies(["a pump", "the pump alarm"]) == {"pump": 2, "alarm": 1}
