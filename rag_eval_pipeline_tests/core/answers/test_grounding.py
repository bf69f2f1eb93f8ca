"""Grounding (claims vs cited text) and agreement of the cited sources."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_eval_pipeline.core.answers.grounding import (
    AgreementSources,
    agreement_pattern,
    agreement_sources,
    content_stems,
    semantic_validation,
    semantic_verdict,
    source_agreement,
    split_sentences,
    strip_citations,
)
from rag_eval_pipeline.core.answers.production import production_metrics
from rag_eval_pipeline.core.answers.types import MetricOutcome
from rag_eval_pipeline.core.types import ChunkId
from rag_eval_pipeline_tests.core.answers.production_data import answer, hit, item
from rag_eval_pipeline_tests.fakes import CountingEmbedder

PUMP = "# Pumps\n\nThe main pump runs at 1,450 rpm. It is serviced every 90 days."


def test_citations_are_removed_and_text_split_into_sentences():
    text = "The pump runs at 1,450 rpm [pa_chunk_1a]. It holds 7.5 bar [c1, c2]! See [the manual]."
    assert strip_citations(text) == "The pump runs at 1,450 rpm . It holds 7.5 bar ! See [the manual]."
    assert split_sentences(
        "# Pumps\n\nThe pump runs. It holds 7.5 bar!\n- Valve V-12 feeds the loop\n\n"
    ) == [
        "The pump runs.",
        "It holds 7.5 bar!",
        "Valve V-12 feeds the loop",
    ]
    assert content_stems("How fast does the main pump run? Pumps running.") == {"fast", "main", "pump", "run"}


def test_semantic_validation_counts_grounded_claims():
    hits = [hit(1, PUMP), hit(2, "Valves are tested in March.")]
    grounded = answer(
        "The main pump runs at 1,450 rpm [c1]. Service happens every 90 days [c1]. "
        "The pump was painted blue in Oslo [c1]. See below.",
        ["c1"],
    )
    outcome = semantic_validation(grounded, hits)
    # claims: {main, pump, run, 1,450, rpm} 5/5; {servic, happen, 90, day} 3/4; {pump, paint, blue, oslo}
    # 1/4; "See below." has content term "see" only, 0/1 -> 2 of 4 validated, 0.5 passes (inclusive).
    assert outcome == MetricOutcome.ok(0.5, "pass: 2 of 4 claims grounded in the cited text")
    assert semantic_verdict(outcome) == "pass"

    # Only the cited chunk counts: c2's text would ground the second claim, but c2 is not cited.
    failing = answer("The pump was painted blue [c1]. Valves are tested in March [c1]. It runs.", ["c1"])
    outcome = semantic_validation(failing, hits)
    assert outcome.value == pytest.approx(1 / 3)  # only "It runs." ({run}) is grounded
    assert outcome.detail.startswith("fail:") and semantic_verdict(outcome) == "fail"

    # A claim with exactly half of its terms in the cited text is validated.
    assert semantic_validation(answer("The pump is blue [c1].", ["c1"]), hits).value == 1.0


@pytest.mark.parametrize(
    ("the_answer", "reason"),
    [
        (answer("The pump runs at 1,450 rpm."), "the answer cites no retrieved chunk"),
        (answer("I don't know [c1].", ["c1"], abstained=True), "the answer abstained"),
        (answer("It is what it is [c1].", ["c1"]), "the answer has no content terms"),
        (answer("", ["c1"], failed=True), "no answer: answer generation failed (model unreachable)"),
    ],
)
def test_semantic_validation_skips(the_answer, reason):
    outcome = semantic_validation(the_answer, [hit(1, PUMP)])
    assert outcome == MetricOutcome.skipped(reason)
    assert semantic_verdict(outcome) == "skipped"
    assert semantic_verdict(MetricOutcome.failed("boom")) == "failed"


def test_a_citation_outside_the_hits_is_an_error():
    with pytest.raises(ValueError, match=r"cited chunk\(s\) \['c9'\] are not among its 1 retrieved chunks"):
        semantic_validation(answer("The pump runs [c9].", ["c9"]), [hit(1, PUMP)])


@pytest.mark.parametrize(
    ("agreement", "pattern"),
    [
        (1.0, "unanimous"),
        (0.951, "unanimous"),
        (0.95, "majority"),
        (0.701, "majority"),
        (0.7, "mixed"),
        (0.401, "mixed"),
        (0.4, "conflicting"),
        (0.0, "conflicting"),
    ],
)
def test_agreement_pattern_bounds_are_exclusive(agreement, pattern):
    assert agreement_pattern(agreement) == pattern


def unit(degrees: float) -> np.ndarray:
    return np.array([math.cos(math.radians(degrees)), math.sin(math.radians(degrees))], dtype=np.float32)


def test_values_are_grouped_greedily_against_each_group_first_member():
    # One sentence per source, in rank order, at these angles: cos(v1, v4) = 0.87 joins v1's group;
    # v3 joins v2 (cos 0.94); v5 has cos 0.77 with v3 but only 0.5 with v2, its group's first member.
    angles = {"v1": 0, "v2": 60, "v3": 80, "v4": 30, "v5": 120}
    vectors = {name: unit(a) for name, a in angles.items()} | {"q": unit(0)}
    sources = AgreementSources("q", tuple(ChunkId(n) for n in angles), tuple((n,) for n in angles))
    found = source_agreement(sources, vectors)
    assert (found.agreement, found.pattern, found.n_sources, found.unique_values) == (
        0.4,
        "conflicting",
        5,
        3,
    )
    assert found.outcome() == MetricOutcome.ok(0.4, "conflicting: 5 sources gave 3 distinct value(s)")


def test_each_source_value_is_its_sentence_closest_to_the_question():
    vectors = {"q": unit(0), "a-off": unit(90), "a-on": unit(10), "b-on": unit(20), "b-off": unit(100)}
    sources = AgreementSources("q", (ChunkId("a"), ChunkId("b")), (("a-off", "a-on"), ("b-on", "b-off")))
    found = source_agreement(sources, vectors)
    assert found.values == ("a-on", "b-on")
    assert (found.agreement, found.pattern) == (1.0, "unanimous")


def test_agreement_needs_two_cited_sources_with_text():
    hits = [hit(1, PUMP), hit(2, "   "), hit(3, "# Heading only")]
    assert agreement_sources("q?", answer("x [c1]", ["c1"]), hits) == MetricOutcome.skipped(
        "fewer than two cited sources"
    )
    assert agreement_sources("q?", answer("x [c1][c2]", ["c1", "c2"]), hits) == MetricOutcome.skipped(
        "fewer than two cited sources"
    )
    found = agreement_sources("q?", answer("x [c3] [c1]", ["c3", "c1"]), hits)
    assert isinstance(found, AgreementSources)
    assert found.chunk_ids == ("c1", "c3")  # rank order
    assert found.sentences == (
        ("The main pump runs at 1,450 rpm.", "It is serviced every 90 days."),
        ("# Heading only",),
    )


def test_agreement_with_minilm_tells_agreeing_from_conflicting_sources(minilm):
    question = "Who leads the night shift?"
    zoe = "# Staff\n\nZoë Mbeki leads the night shift. She has worked at the plant since 2015."
    zoe_again = "The night shift is led by Zoë Mbeki. She joined the plant in 2019."
    tomasz = "Tomasz Wiśniewski leads the night shift. He also trains new staff."
    agreeing = item(
        question, answer("Zoë Mbeki [c1][c2].", ["c1", "c2"], qid="agree"), [hit(1, zoe), hit(2, zoe_again)]
    )
    conflicting = item(
        question, answer("Zoë Mbeki [c1][c2].", ["c1", "c2"], qid="conflict"), [hit(1, zoe), hit(2, tomasz)]
    )
    embedder = CountingEmbedder(minilm)
    run = production_metrics(
        [agreeing, conflicting], embedder, top_k=2, candidate_depth=2, retrievers=("knn",)
    )
    agree, conflict = run.rows
    assert (agree.multi_source_agreement.value, agree.agreement_pattern) == (1.0, "unanimous")
    assert (agree.n_sources, agree.unique_values) == (2, 1)
    assert (conflict.multi_source_agreement.value, conflict.agreement_pattern) == (0.5, "mixed")
    assert (conflict.n_sources, conflict.unique_values) == (2, 2)
    # One embedding call for the whole batch, each distinct text once (the question and zoe's
    # sentences are shared by both rows).
    assert len(embedder.calls) == 1
    assert len(embedder.calls[0]) == len(set(embedder.calls[0])) == 7
