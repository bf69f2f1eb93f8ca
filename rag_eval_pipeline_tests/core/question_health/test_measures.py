"""Each health measure on the hand-made set (handmade.py), whose answers are known by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames
from rag_eval_pipeline.core.question_health.coverage import coverage, document_sections
from rag_eval_pipeline.core.question_health.duplicates import near_duplicates
from rag_eval_pipeline.core.question_health.lexical import (
    bm25_ranks_reference_first,
    keyword_trivial,
    lexical_overlap,
    term_overlap,
)
from rag_eval_pipeline.core.question_health.references import markup_kind, reference_chars, reference_markup
from rag_eval_pipeline.core.question_health.separation import (
    SetupScores,
    effective_sample_size,
    separation,
    setup_scores,
)
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId
from rag_eval_pipeline_tests.core.question_health import handmade

IDS = [QuestionId(q) for q, _, _ in handmade.QUESTIONS]


def test_near_duplicates_pairs_groups_and_nearest_questions():
    found = near_duplicates(IDS, handmade.vectors(), 0.9)
    ((pair),) = found.pairs
    assert (pair.first, pair.second) == ("q-pump", "q-pump-2")
    assert pair.cosine == pytest.approx(np.cos(np.radians(20)))  # 0.940
    assert found.questions_in_pairs == {"q-pump", "q-pump-2"}
    assert found.groups == (("q-pump", "q-pump-2"), *((q,) for q in IDS[2:]))
    assert found.nearest["q-pump"] == ("q-pump-2", pytest.approx(0.9397, abs=1e-4))
    assert found.nearest["q-alarm"][1] == pytest.approx(0.0)  # scaled by 5: cosine normalises
    assert found.nearest["q-plain"] == ("q-pump", 0.0)  # a zero vector: similar to nothing, first of equals
    # 0.95: no pair; a chain of pairs joins one group; a question alone has no nearest question
    assert near_duplicates(IDS, handmade.vectors(), 0.95).pairs == ()
    chain = np.array([[0.80, 0.60], [0.95, 0.31], [1.0, 0.0], [0.0, 1.0]])  # b-c 0.951, a-b 0.947
    joined = near_duplicates([QuestionId(q) for q in "abcd"], chain, 0.9)
    assert [(p.first, p.second) for p in joined.pairs] == [("b", "c"), ("a", "b")]  # highest cosine first
    assert joined.groups == (("a", "b", "c"), ("d",))  # a and c (cosine 0.80) are joined through b
    assert near_duplicates([QuestionId("x")], np.ones((1, 3)), 0.9).nearest == {"x": (None, None)}
    with pytest.raises(ValueError, match="2 vectors for 1 questions"):
        near_duplicates([QuestionId("x")], np.ones((2, 3)), 0.9)


def test_lexical_overlap_is_the_share_of_the_questions_terms_in_its_reference():
    assert term_overlap("How fast does the main pump run?", "The main pump runs at 1,450 rpm") == 0.5
    assert term_overlap("Where is V-12?", "Valve V-12 feeds the loop") == 1.0  # identifiers stay whole
    assert term_overlap("what is it?", "anything") is None  # stopwords only: nothing to copy
    assert lexical_overlap(handmade.examples()) == {
        "q-pump": 0.5,
        "q-pump-2": 0.5,
        "q-alarm": 1.0,
        "q-include": 0.0,
        "q-note": 0.5,
        "q-code": pytest.approx(2 / 3),
        "q-short": 0.0,
        "q-valve": 1.0,
        "q-plain": 0.5,
    }


def test_keyword_trivial_needs_every_term_copied_and_bm25_ranking_the_reference_first():
    examples, corpus = handmade.examples(), handmade.corpus()
    first = bm25_ranks_reference_first(examples, corpus, handmade.windows())
    assert first["q-alarm"] and first["q-pump"]
    assert not first["q-valve"]  # notes/cooling.md holds its terms more densely
    assert not first["q-include"]  # no word of it in any passage: no hit at all
    assert keyword_trivial(lexical_overlap(examples), first) == {"q-alarm"}
    # the default passages, the retrievability probe's windows: one per short document here
    probe = bm25_ranks_reference_first(examples, corpus)
    assert probe["q-alarm"] and probe["q-plain"] and not probe["q-valve"]
    assert bm25_ranks_reference_first([], corpus) == {}


def test_coverage_of_documents_and_of_sections_under_markdown_headings():
    corpus, examples = handmade.corpus(), handmade.examples()
    sections = document_sections(corpus["guide/pumps.md"])
    assert [s.name for s in sections] == [
        "guide/pumps.md",
        "guide/pumps.md § Pumps",
        "guide/pumps.md § Pressure",
    ]
    # a section runs from its heading's line to the next heading; the '#' line in fenced code is none
    assert handmade.PUMPS[sections[2].start :].startswith("### Pressure\n")
    assert sections[2].end == len(handmade.PUMPS)
    assert [s.name for s in document_sections(corpus["notes/plain.txt"])] == ["notes/plain.txt"]
    assert document_sections(corpus["notes/code_only.md"]) == []

    found = coverage(corpus, examples)
    assert (found.documents.n, found.documents.covered, found.n_documents_without_prose) == (5, 3, 1)
    assert [g.name for g in found.documents.gaps] == ["notes/unasked.md", "notes/cooling.md"]  # largest first
    assert found.documents.gaps[0].chars == len(handmade.UNASKED)
    assert (found.sections.n, found.sections.covered) == (len(handmade.SECTIONS), 4)
    uncovered = {name for name, by in handmade.SECTIONS.items() if by is None}
    assert {g.name for g in found.sections.gaps} == uncovered
    sizes = [g.chars for g in found.sections.gaps]
    assert sizes == sorted(sizes, reverse=True)
    assert found.documents.share == pytest.approx(0.6) and found.sections.share == 0.5


def test_reference_length_merges_overlapping_spans():
    (example,) = [e for e in handmade.examples() if e.question_id == "q-pump"]
    assert reference_chars(example) == len("The main pump runs at 1,450 rpm")
    text = handmade.PUMPS
    overlapping = example.__class__(
        QuestionId("x"),
        "q",
        (
            CharacterSpan(DocumentId("guide/pumps.md"), 0, 10, text[0:10]),
            CharacterSpan(DocumentId("guide/pumps.md"), 5, 20, text[5:20]),
        ),
    )
    assert reference_chars(overlapping) == 20


def test_markup_in_references_as_the_passage_chooser_classifies_lines():
    assert reference_markup(handmade.examples(), handmade.corpus()) == {
        "q-pump": (),
        "q-pump-2": (),
        "q-alarm": (),
        "q-include": ("include",),
        "q-note": ("admonition", "html"),
        "q-code": ("code",),
        "q-short": (),
        "q-valve": (),
        "q-plain": (),
    }
    assert markup_kind("/// warning | Careful") == "admonition"
    assert markup_kind(".. note::") == "admonition"
    assert markup_kind("<!-- hidden -->") == "html"
    assert markup_kind("--8<-- 'snippets/a.md'") == "include"
    assert markup_kind("---") == "other"
    assert markup_kind("PR [#1](https://x/1) by [@a](https://x/a)") == "links"


def test_separation_and_the_effective_sample_size():
    separated = separation(handmade.scores(), IDS)
    assert separated.measured and separated.setups == ("a x p", "b x p", "c x p")
    assert list(separated.compared) == handmade.COMPARED  # q-valve: c was not evaluated on it
    assert list(separated.no_setup) == handmade.NO_SETUP
    assert list(separated.every_setup) == handmade.EVERY_SETUP
    assert list(separated.same_score) == handmade.SAME_SCORE
    assert separated.ranges["q-plain"] == (0.25, 1.0)
    duplicates = near_duplicates(IDS, handmade.vectors(), 0.9)
    assert effective_sample_size(IDS, duplicates, separated) == handmade.EFFECTIVE_SAMPLE_SIZE
    # one setup: separation is unknown, only near-duplicates are discounted (9 questions, one pair)
    alone = separation(SetupScores("m", {"a x p": handmade.scores().scores["a x p"]}, {}), IDS)
    assert not alone.measured and alone.same_score == alone.compared
    assert effective_sample_size(IDS, duplicates, alone) == 8
    # no setup at all (no partition evaluated yet)
    nothing = separation(SetupScores("m", {}, {}), IDS)
    assert nothing.compared == () and effective_sample_size(IDS, duplicates, nothing) == 8


def metrics_frame(config: str, profile: str, values: dict[str, float], **columns: object) -> pd.DataFrame:
    rows = [
        {
            "question_id": q,
            "chunk_config": config,
            "profile": profile,
            "dataset_sha256": "d1",
            "document_scope": "",
            "span_recall": v / 2,
            "span_recall_1000t": v,
            **columns,
        }
        for q, v in values.items()
    ]
    return pd.DataFrame(rows)


def test_setup_scores_compare_only_setups_measured_alike_and_still_configured():
    frames = {
        "c1|p": metrics_frame("c1", "p", {"q1": 1.0, "q2": 0.0}),
        "c2|p": metrics_frame("c2", "p", {"q1": 0.5, "q2": 0.0}),
        "c3|p": metrics_frame("c3", "p", {"q1": 1.0}, dataset_sha256="d0"),
        "c4|p": metrics_frame("c4", "p", {"q1": 1.0}, document_scope="a1b2"),
        "gone|p": metrics_frame("gone", "p", {"q1": 1.0}),
        "c5|p": pd.DataFrame(),  # not evaluated yet
    }
    configured = ConfiguredNames(frozenset({"c1", "c2", "c3", "c4"}), frozenset({"p"}))
    found = setup_scores(frames, "span_recall_1000t", "span_recall", "d1", configured)
    assert found.metric == "span_recall_1000t"
    assert found.scores == {"c1 x p": {"q1": 1.0, "q2": 0.0}, "c2 x p": {"q1": 0.5, "q2": 0.0}}
    assert found.left_out == {
        "c3 x p": "measured on other questions",
        "c4 x p": "its chunk config covers some documents only",
        "gone x p": "chunk config removed",
    }
    # tables written before the objective's column existed: its fallback, as the leaderboard ranks them
    old = {k: f.drop(columns="span_recall_1000t") for k, f in frames.items() if not f.empty}
    assert setup_scores(old, "span_recall_1000t", "span_recall", "d1", None).scores["c2 x p"] == {
        "q1": 0.25,
        "q2": 0.0,
    }
    assert setup_scores({}, "span_recall_1000t", "span_recall", "d1").scores == {}
