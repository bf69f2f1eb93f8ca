"""Reading replies: citations, the confidence line, abstention."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.answers.citations import (
    find_citations,
    parse_answer,
    says_it_does_not_know,
    split_confidence,
)
from rag_eval_pipeline.core.types import QuestionId

A = "chunk_0123456789ab"
B = "pa_chunk_aaaaaaaaaaaa"
C = "chunk_bbbbbbbbbbbb"
RETRIEVED = {A, B, C}


def test_parse_answer_collects_valid_citations_in_order_of_first_citation():
    reply = (
        f"The pump runs at 1,450 rpm [{B}]. It is serviced every 90 days [{A}] and again noted [{B}].\n"
        "Confidence: HIGH"
    )
    answer = parse_answer(QuestionId("q1"), reply, RETRIEVED, "openai:gpt-4o-mini")
    assert answer.cited_chunk_ids == (B, A)
    assert answer.invalid_citations == ()
    assert answer.confidence == "HIGH"
    assert answer.text == reply.splitlines()[0]  # citations kept, confidence line removed
    assert answer.question_id == "q1" and answer.answerer == "openai:gpt-4o-mini"
    assert answer.status == "ok" and not answer.abstained


def test_ids_not_retrieved_are_invalid_citations_and_repeats_count_once():
    reply = f"Yes [chunk_0123abcd] and [{A}] and [chunk_ffffffffffff][chunk_0123abcd]."
    answer = parse_answer(QuestionId("q"), reply, RETRIEVED, "m")
    assert answer.cited_chunk_ids == (A,)
    assert answer.invalid_citations == ("chunk_0123abcd", "chunk_ffffffffffff")


@pytest.mark.parametrize(
    "text",
    [
        f"x [{A}, {B}] y [{C}]",
        f"x [{A}][{B}] y [{C}]",
        f"x [ {A} ,{B} ] y [{C}]",
        f"x [{A}; {B}] y [ {C} ]",
        f"x [`{A}`, '{B}'] y [source: {C}]",
        f"x [{A} and {B}] y [{C}.]",
    ],
)
def test_list_syntaxes_and_whitespace_are_accepted(text: str):
    assert find_citations(text, RETRIEVED).valid == (A, B, C)


def test_brackets_that_are_not_chunk_ids_are_not_citations():
    text = "See [1], [the runbook](../ops.md), [architecture/platform_overview.md] and [chunk_id]."
    assert find_citations(text, RETRIEVED) == find_citations("", RETRIEVED)
    assert find_citations(text, RETRIEVED).invalid == ()


def test_a_retrieved_id_of_another_shape_is_recognised_when_cited():
    assert find_citations("per [doc-7#3] and [doc-9]", {"doc-7#3"}).valid == ("doc-7#3",)


@pytest.mark.parametrize(
    ("reply", "text", "confidence"),
    [
        ("Answer [x].\nConfidence: HIGH", "Answer [x].", "HIGH"),
        ("Answer.\n\nconfidence: medium\n", "Answer.", "MEDIUM"),
        ("Answer.\n**Confidence:** Low.", "Answer.", "LOW"),
        ("Answer.\nConfidence level = HIGH", "Answer.", "HIGH"),
        ("Answer. Confidence: LOW", "Answer.", "LOW"),
        ("Answer.\nConfidence: HIGH\nConfidence: LOW", "Answer.", "LOW"),  # the last one stated
        ("Answer without a confidence line.", "Answer without a confidence line.", None),
        ("Confidence: VERY HIGH", "Confidence: VERY HIGH", None),  # not a level we know
        ("The overconfidence: low margins hurt.", "The overconfidence: low margins hurt.", None),
    ],
)
def test_confidence_is_parsed_and_removed(reply: str, text: str, confidence: str | None):
    assert split_confidence(reply) == (text, confidence)


@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "I don’t know, the passages are about valves.",  # curly apostrophe
        "I DO NOT KNOW",
        "The context does not contain the answer.",
        "There is not enough information to say.",
        "I cannot answer this from the context.",
        "The passages give no information about the night shift.",
    ],
)
def test_abstentions_are_recognised(text: str):
    assert says_it_does_not_know(text)
    assert parse_answer(QuestionId("q"), text + "\nConfidence: LOW", RETRIEVED, "m").abstained


@pytest.mark.parametrize(
    "text",
    [f"The main pump runs at 1,450 rpm [{A}].", "I know the answer: 7.5 bar.", "Unknowns remain."],
)
def test_answers_are_not_abstentions(text: str):
    assert not says_it_does_not_know(text)
