from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.passages import (
    BoilerplateDetector,
    Passage,
    candidate_passages,
    is_mostly_prose,
    score_text,
    select_passages,
)
from rag_eval_pipeline.core.generation.terms import TermStatistics
from rag_eval_pipeline.core.types import Document, DocumentId

CORPUS_DIR = Path(__file__).resolve().parents[3] / "data" / "corpus"
ESCALATION = "**Escalation contact.**"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_folder(CORPUS_DIR)


def boilerplate_ranges(corpus: Corpus, marker: str = ESCALATION) -> list[tuple[str, int, int]]:
    """Every copy of the paragraph that starts with ``marker``, as (doc, start, end)."""
    ranges: list[tuple[str, int, int]] = []
    for doc in corpus:
        for match in re.finditer(re.escape(marker) + r"[^\n]*", doc.text):
            ranges.append((doc.doc_id, match.start(), match.end()))
    return ranges


def assert_valid(corpus: Corpus, passages: list[Passage], min_chars: int, max_chars: int) -> None:
    for passage in passages:
        span = passage.span
        assert corpus[span.doc_id].text[span.start : span.end] == span.text
        assert min_chars <= len(span) <= max_chars
        assert span.text == span.text.strip()
        assert passage.score > 0
    for a, b in combinations(passages, 2):
        assert not a.span.overlaps(b.span), (a.span, b.span)


def test_the_bundled_boilerplate_really_repeats(corpus: Corpus) -> None:
    assert len(boilerplate_ranges(corpus)) == 3


@pytest.mark.parametrize("seed", [0, 1, 7, 13])
def test_selected_passages_are_valid_spread_and_never_boilerplate(corpus: Corpus, seed: int) -> None:
    passages = select_passages(corpus, 1000, seed)
    assert len(passages) > 3 * len(corpus)
    assert_valid(corpus, passages, 200, 600)
    copies = boilerplate_ranges(corpus)
    for passage in passages:
        for doc_id, start, end in copies:
            assert not (
                passage.span.doc_id == doc_id and passage.span.start < end and start < passage.span.end
            )
    # Round-robin: every document gets a passage before any gets a second one.
    first_round = [p.span.doc_id for p in passages[: len(corpus)]]
    assert sorted(first_round) == sorted(doc.doc_id for doc in corpus)


def test_selection_is_seeded_and_a_smaller_n_is_a_prefix(corpus: Corpus) -> None:
    assert select_passages(corpus, 12, seed=5) == select_passages(corpus, 12, seed=5)
    assert select_passages(corpus, 12, seed=5) != select_passages(corpus, 12, seed=6)
    assert select_passages(corpus, 5, seed=5) == select_passages(corpus, 12, seed=5)[:5]
    assert select_passages(corpus, 0, seed=5) == []


def test_candidates_hold_no_boilerplate_sentence(corpus: Corpus) -> None:
    detector = BoilerplateDetector.from_corpus(corpus)
    candidates = candidate_passages(corpus)
    assert candidates == sorted(candidates, key=lambda p: (p.span.doc_id, p.span.start, p.span.end))
    assert not any("Do not send direct messages to individual managers" in p.span.text for p in candidates)
    assert not any(detector.is_boilerplate(p.span.text) for p in candidates)
    # The sentences right before and after a repeated paragraph are still usable.
    assert any("it is repeated here for anyone who reads this page" in p.span.text for p in candidates)
    assert any(p.span.text.startswith("## INC-2024-004") for p in candidates)


def _doc(doc_id: str, text: str) -> Document:
    return Document(DocumentId(doc_id), text)


PROSE = (
    "The main pump runs at 1,450 rpm and is serviced every 90 days by the maintenance crew. "
    "A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds. "
    "Valve V-12 feeds the cooling loop and was replaced in 2021 after corrosion was found.\n"
)


def test_headings_only_and_code_only_windows_are_excluded() -> None:
    code = "```python\n" + "".join(f"value_{i} = compute({i}, factor=0.{i})\n" for i in range(6)) + "```\n"
    headings = "".join(f"## Section {i} about pumps\n\n" for i in range(20))
    corpus = Corpus((_doc("a.md", headings + code + "\n" + PROSE), _doc("b.md", "# B\n\n" + PROSE[::-1])))
    candidates = candidate_passages(corpus, min_chars=120, max_chars=400)
    assert candidates
    for passage in candidates:
        assert is_mostly_prose(passage.span.text), passage.span.text
        assert "```" not in passage.span.text
        assert passage.span.text.count("##") <= 1
    assert not is_mostly_prose(code)
    assert not is_mostly_prose(headings)


def test_a_window_never_runs_into_the_next_section() -> None:
    speed, alarm, valve = (s.strip() + "." for s in PROSE.strip().rstrip(".").split(". "))
    text = f"# Pumps\n\n## Speed\n\n{speed}\n\n## Alarms\n\n{alarm}\n\n## Valves\n\n{valve}\n"
    corpus = Corpus((_doc("a.md", text),))
    within_sections = candidate_passages(corpus, min_chars=70, max_chars=400)
    assert within_sections
    for passage in within_sections:
        assert sum(s in passage.span.text for s in (speed, alarm, valve)) == 1
    assert candidate_passages(corpus, min_chars=200, max_chars=400) == []


def test_a_long_repeated_sentence_is_boilerplate_even_as_a_minority() -> None:
    repeated = "Do not send direct messages to managers; post in the escalation channel instead."
    detector = BoilerplateDetector.from_units(
        [
            ("a.md", 0, f"Pumps run at 1,450 rpm. {repeated}"),
            ("b.md", 0, f"{repeated} Valves open at 7.5 bar."),
        ]
    )
    assert detector.repeated == {repeated.lower()}
    assert detector.is_boilerplate(f"{PROSE} {repeated} {PROSE}")
    assert not detector.is_boilerplate(PROSE)
    # The same sentence seen twice at the same place (overlapping chunks) is not a repeat.
    same_place = BoilerplateDetector.from_units([("a.md", 0, repeated), ("a.md", 0, repeated + " Tail.")])
    assert not same_place.repeated


def test_denser_text_scores_higher() -> None:
    stats = TermStatistics.from_texts(["the pump", "the valve", "the alarm"])
    dense, top = score_text("Pump P-7 runs at 1,450 rpm; valve V-12 opens at 7.5 bar.", stats)
    chatty, _ = score_text("It is what it is, and that is all there is to it, as they say.", stats)
    assert dense > chatty
    assert {"p-7", "v-12", "1,450"} <= set(top)


sentences = st.sampled_from(
    [
        "The pump runs at {n} rpm.",
        "Valve V-{n} feeds the cooling loop.",
        "Shift {n} starts at 06:00 and ends at 14:00.",
        "The alarm threshold is {n} bar for ten seconds.",
        "Heron rejects batches larger than {n} MiB.",
        "Nobody may be primary twice in {n} weeks.",
    ]
)
BOILERPLATE = (
    "Escalation contact: post in the escalations channel and tag the duty manager on call this week."
)


@st.composite
def corpora(draw: st.DrawFn) -> Corpus:
    """2-5 documents of numbered sentences; the same boilerplate paragraph pasted into at least two."""
    n_docs = draw(st.integers(2, 5))
    carriers = set(draw(st.lists(st.integers(0, n_docs - 1), min_size=2, max_size=n_docs, unique=True)))
    docs = []
    for d in range(n_docs):
        paragraphs = []
        for _ in range(draw(st.integers(1, 4))):
            body = draw(st.lists(sentences, min_size=1, max_size=6))
            paragraphs.append(" ".join(s.format(n=draw(st.integers(1, 999))) for s in body))
        if d in carriers:
            paragraphs.insert(draw(st.integers(0, len(paragraphs))), BOILERPLATE)
        docs.append(_doc(f"d{d}.md", f"# Doc {d}\n\n" + "\n\n".join(paragraphs) + "\n"))
    return Corpus(tuple(docs))


@settings(max_examples=40, deadline=None)
@given(corpus=corpora(), seed=st.integers(0, 10**6), n=st.integers(1, 30))
def test_random_corpora_give_valid_passages_without_boilerplate(corpus: Corpus, seed: int, n: int) -> None:
    passages = select_passages(corpus, n, seed, min_chars=60, max_chars=300)
    assert len(passages) <= n
    assert_valid(corpus, passages, 60, 300)
    for passage in passages:
        assert BOILERPLATE not in passage.span.text
        text = corpus[passage.span.doc_id].text
        start = passage.span.start
        assert start == 0 or text[start - 1].isspace(), "passages start at a sentence"
    assert passages == select_passages(corpus, n, seed, min_chars=60, max_chars=300)
