from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.generation.excerpts import (
    MIN_EXCERPT_CHARS,
    explain_miss,
    locate_excerpt,
    normalise,
    normalise_excerpt,
)
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus"
DOC = DocumentId("doc")

# Prose-like pieces with the characters that make normalisation hard: multi-character case folds
# ("ß", "İ"), a decomposed accent, curly quotes, dashes, markdown markers, odd whitespace.
_PIECES = [
    *"abcdefgh ABCDEF 0123 \n\t",
    "the ",
    "pump ",
    "ß",
    "İ",
    "é",
    "e\u0301",
    "Σ",
    "ς",
    "ﬁ",
    "'",
    '"',
    "-",
    "*",
    "_",
    "`",
    ",",
    ";",
    "\u00a0",
    "\n\n",
]
documents = st.lists(st.sampled_from(_PIECES), min_size=20, max_size=80).map("".join)


def _substring(doc: str, data: st.DataObject) -> str:
    """A slice long enough that most draws survive the minimum-length filter."""
    start = data.draw(st.integers(0, max(0, len(doc) - 2 * MIN_EXCERPT_CHARS)))
    end = data.draw(st.integers(min(len(doc), start + 2 * MIN_EXCERPT_CHARS), len(doc)))
    return doc[start:end]


def _read(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


def _assert_real_text(text: str, spans: tuple[CharacterSpan, ...]) -> None:
    for span in spans:
        assert text[span.start : span.end] == span.text
        assert span.end > span.start


@settings(max_examples=75, deadline=None)
@given(doc=documents, data=st.data())
def test_any_substring_is_found_exactly_at_its_first_occurrence(doc: str, data: st.DataObject) -> None:
    excerpt = _substring(doc, data)
    assume(len(normalise_excerpt(excerpt.strip())) >= MIN_EXCERPT_CHARS)
    match = locate_excerpt(DOC, doc, excerpt)
    assert match is not None
    assert match.method == "exact"
    stripped = excerpt.strip()
    first = doc.find(stripped)
    assert [(s.start, s.end, s.text) for s in match.spans] == [(first, first + len(stripped), stripped)]
    assert match.occurrences >= doc.count(stripped)  # count() skips overlapping copies
    assert (match.occurrences > 1) == (doc.find(stripped, first + 1) >= 0)


def _perturb(excerpt: str, rnd: random.Random) -> str:
    """What an LLM does to a quote: re-flowed whitespace, case changes, curly quotes, en dashes and
    emphasis markers, wrapped in quotes."""
    out = []
    for ch in excerpt:
        if rnd.random() < 0.2:
            out.append(rnd.choice(["**", "_", "`"]))
        if ch.isspace():
            out.append(rnd.choice([" ", "\n", "  ", " \n\t", "\u00a0"]))
        elif ch == "'":
            out.append(rnd.choice(["'", "’", "‘"]))
        elif ch == '"':
            out.append(rnd.choice(['"', "“", "”"]))
        elif ch == "-":
            out.append(rnd.choice(["-", "–", "—"]))
        elif ch.isalpha() and rnd.random() < 0.5:
            out.append(ch.swapcase())
        else:
            out.append(ch)
    return rnd.choice(["", " ", "“", '"', "\n"]) + "".join(out) + rnd.choice(["", " ", "”", '."'])


@settings(max_examples=75, deadline=None)
@given(doc=documents, data=st.data())
def test_a_perturbed_substring_is_found_and_maps_to_real_text(doc: str, data: st.DataObject) -> None:
    excerpt = _perturb(_substring(doc, data), random.Random(data.draw(st.integers(0, 2**32))))
    needle = normalise_excerpt(excerpt)
    assume(len(needle) >= MIN_EXCERPT_CHARS and "..." not in excerpt)
    match = locate_excerpt(DOC, doc, excerpt)
    assert match is not None, explain_miss(doc, excerpt)
    assert len(match.spans) == 1
    _assert_real_text(doc, match.spans)
    assert normalise(match.spans[0].text).text == needle
    if excerpt.strip() not in doc:
        assert match.method == "normalised"


@settings(max_examples=75, deadline=None)
@given(doc=documents, data=st.data())
def test_an_excerpt_with_a_foreign_character_is_not_found(doc: str, data: st.DataObject) -> None:
    excerpt = _substring(doc, data)
    cut = data.draw(st.integers(0, len(excerpt)))
    # "q" and "#" occur nowhere in the documents, in any case or fold.
    excerpt = "zz " + excerpt[:cut] + data.draw(st.sampled_from(["q", "Q", "#"])) + excerpt[cut:] + " zz"
    assume(len(normalise_excerpt(excerpt)) >= MIN_EXCERPT_CHARS)
    assert locate_excerpt(DOC, doc, excerpt) is None
    assert explain_miss(doc, excerpt)


def test_boilerplate_paragraph_reports_its_repeats_and_takes_the_first() -> None:
    text = _read("operations/on_call.md")
    excerpt = "**Escalation contact.** If neither the primary nor the secondary on-call engineer"
    match = locate_excerpt(DOC, text, excerpt)
    assert match is not None
    assert match.method == "exact"
    assert match.occurrences == 2
    assert match.spans[0].start == text.index(excerpt)
    # The same quote as an LLM writes it: emphasis dropped, case and quotes changed.
    loose = "“escalation contact. If neither the primary nor the SECONDARY on-call engineer”"
    match = locate_excerpt(DOC, text, loose)
    assert match is not None
    assert match.method == "normalised"
    assert match.occurrences == 2
    assert (
        match.spans[0].text
        == "Escalation contact.** If neither the primary nor the secondary on-call engineer"
    )


def test_normalised_match_spans_real_text_across_lines_and_dashes() -> None:
    text = _read("operations/cost_management.md")
    excerpt = (
        "deleted after 14 days if nobody claims them - the only exception is the lark-kestrel-tier bucket"
    )
    match = locate_excerpt(DOC, text, excerpt)
    assert match is not None
    assert match.method == "normalised"
    span = match.spans[0]
    assert text[span.start : span.end] == span.text
    assert span.text.startswith("deleted after 14 days") and span.text.endswith("lark-kestrel-tier` bucket")
    assert "—" in span.text


def test_ellipsis_parts_are_found_in_order_each_with_its_span() -> None:
    text = _read("operations/on_call.md")
    excerpt = "Shifts last one week and hand over … at 10:00 Europe/Amsterdam time."
    match = locate_excerpt(DOC, text, excerpt)
    assert match is not None
    assert [s.text for s in match.spans] == [
        "Shifts last one week and hand over",
        "at 10:00 Europe/Amsterdam time.",
    ]
    assert match.spans[0].end <= match.spans[1].start
    _assert_real_text(text, match.spans)
    backwards = "at 10:00 Europe/Amsterdam time ... Shifts last one week and hand over"
    assert locate_excerpt(DOC, text, backwards) is None
    assert "out of order" in explain_miss(text, backwards)


def test_short_excerpts_are_refused_as_ambiguous() -> None:
    text = _read("operations/on_call.md")
    assert "SEV1" in text
    assert locate_excerpt(DOC, text, "  **SEV1** ") is None
    assert f"at least {MIN_EXCERPT_CHARS}" in explain_miss(text, "  **SEV1** ")
    # one short part is enough to refuse the whole excerpt
    assert locate_excerpt(DOC, text, "Shifts last one week and hand over ... 10:00") is None


@pytest.mark.parametrize(
    ("text", "excerpt", "expected"),
    [
        # "İ".lower() is two characters: offsets must still land on the original text.
        ("Visit İstanbul Straße now, by tram", "istanbul STRASSE now, by", "İstanbul Straße now, by"),
        # a decomposed accent after the last matched letter stays with its letter
        ("we met at the cafe\u0301 again", "We met at the café", "we met at the cafe\u0301"),
        (
            "the *main* pump runs at `1,450` rpm.",
            "The main pump runs at 1,450 rpm",
            "the *main* pump runs at `1,450` rpm",
        ),
    ],
)
def test_normalised_offsets_map_back_to_original_characters(text: str, excerpt: str, expected: str) -> None:
    match = locate_excerpt(DOC, text, excerpt)
    assert match is not None
    assert match.method == "normalised"
    assert match.spans[0].text == expected
    assert text[match.spans[0].start : match.spans[0].end] == expected


def test_a_match_never_starts_inside_the_fold_of_one_character() -> None:
    # "se ist lang" only matches the second half of "ß" + "e": not document text, so not a match.
    assert locate_excerpt(DOC, "die Straße ist lang und breit", "se ist lang und breit") is None


def test_explain_miss_names_the_longest_prefix_and_where_it_diverges() -> None:
    text = _read("operations/on_call.md")
    excerpt = "The primary must acknowledge a page within 7 minutes"
    assert locate_excerpt(DOC, text, excerpt) is None
    reason = explain_miss(text, excerpt)
    start = text.index("The primary must acknowledge a page within ")
    assert f"at [{start}:" in reason
    assert "'7 minutes'" in reason and "'5 minutes" in reason
    assert explain_miss(text, "The primary must acknowledge a page within 5 minutes").startswith(
        "the excerpt is found"
    )
