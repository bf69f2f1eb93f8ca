"""The health report of the hand-made set: its row, its per-question table, and a warning exactly where a
measure crosses its limit, each saying what to do."""

from __future__ import annotations

import json

import pytest

from rag_eval_pipeline.core.question_health.report import (
    Distribution,
    HealthLimits,
    QuestionSetHealth,
    assess,
    health_warnings,
    listed,
    measure_rows,
    percent,
    question_frame,
    summary_row,
    warnings_of,
)
from rag_eval_pipeline_tests.core.question_health import handmade


def handmade_health() -> QuestionSetHealth:
    return assess(
        handmade.examples(), handmade.corpus(), handmade.vectors(), 0.9, handmade.scores(), handmade.windows()
    )


def test_distribution_is_the_mean_and_quartiles_of_the_values_present():
    found = Distribution.of([4.0, None, 1.0, 3.0, 2.0, 5.0])
    assert (found.n, found.mean, found.minimum, found.q1, found.median, found.q3, found.maximum) == (
        5,
        3.0,
        1.0,
        2.0,
        3.0,
        4.0,
        5.0,
    )
    assert Distribution.of([None]).mean is None
    assert percent(41, 100) == "41 %" and percent(1, 300) == "<1 %" and percent(0, 0) == "n/a"


def test_the_row_holds_every_measure_of_the_handmade_set():
    health = handmade_health()
    row = summary_row(health, health_warnings(health))
    n = len(handmade.QUESTIONS)
    assert row["n_questions"] == n == 9
    assert (row["n_duplicate_pairs"], row["n_questions_in_duplicate_pairs"]) == (1, 2)
    assert (row["n_keyword_trivial"], row["n_all_terms_in_reference"]) == (1, 2)  # q-alarm; and q-valve
    assert row["keyword_trivial_share"] == pytest.approx(1 / 9)
    # overlaps, sorted: 0, 0, .5, .5, .5, .5, 2/3, 1, 1 (numpy's quartiles at positions 2, 4 and 6)
    assert row["term_overlap_mean"] == pytest.approx((4 * 0.5 + 2 / 3 + 2) / 9)
    assert (row["term_overlap_q1"], row["term_overlap_median"]) == (0.5, 0.5)
    assert row["term_overlap_q3"] == pytest.approx(2 / 3)
    assert (row["n_documents"], row["n_documents_covered"], row["document_coverage"]) == (5, 3, 0.6)
    assert (row["n_sections"], row["n_sections_covered"], row["section_coverage"]) == (8, 4, 0.5)
    lengths = sorted(len(x) for _, _, refs in handmade.QUESTIONS for _, x in refs)
    assert (row["reference_chars_minimum"], row["reference_chars_maximum"]) == (4, lengths[-1])
    assert row["reference_chars_median"] == lengths[4]
    assert row["n_references_with_markup"] == 3
    assert {k: row[f"markup_{k}"] for k in ("include", "admonition", "html", "links", "code", "other")} == {
        "include": 1,
        "admonition": 1,
        "html": 1,
        "links": 0,
        "code": 1,
        "other": 0,
    }
    assert (row["n_setups"], row["n_questions_compared"]) == (3, 8)
    assert (row["n_no_setup"], row["n_every_setup"], row["n_same_score"]) == (2, 2, 5)
    assert row["effective_sample_size"] == handmade.EFFECTIVE_SAMPLE_SIZE == 3
    assert "the 5 that score the same on every setup left out" in row["effective_sample_size_basis"]
    assert "of the 8 questions every setup was evaluated on" in row["effective_sample_size_basis"]
    (pair,) = listed(row, "duplicate_pairs_json")
    assert (pair["first"], pair["second_query"]) == ("q-pump", "How fast does the main pump turn?")
    assert [g["name"] for g in listed(row, "document_gaps_json")] == ["notes/unasked.md", "notes/cooling.md"]
    assert len(listed(row, "section_gaps_json")) == 4
    json.loads(row["warnings_json"])  # valid JSON


def test_a_warning_where_a_measure_crosses_its_limit_and_none_elsewhere():
    health = handmade_health()
    warnings = health_warnings(health)
    assert [w.measure for w in warnings] == [
        "near_duplicates",  # 2 of 9 questions are in a pair: >= 5 %
        "document_coverage",  # 3 of 5: below 80 %
        "markup",  # an include directive, an admonition, HTML
        "no_setup",  # 2 of 8 compared: >= 10 %
        "same_score",  # 5 of 8: >= 50 %
        "effective_sample_size",  # 3 < 30
    ]  # not: keyword-trivial (1 of 9 < 25 %), sections (4 of 8 is not below 50 %), short references (2 of 9)
    text = {w.measure: w.text for w in warnings}
    assert text["near_duplicates"].startswith(
        "1 pair(s) of near-duplicate questions (embedding cosine >= 0.9"
    )
    assert "q-pump and q-pump-2 (0.940)" in text["near_duplicates"]
    assert text["document_coverage"].startswith("2 of 5 documents (40 %) have no question, the largest: ")
    assert "notes/unasked.md (" in text["document_coverage"]
    assert "raise token_level.n_questions in data/generation.yaml" in text["document_coverage"]
    assert "include directives 1" in text["markup"] and "e.g. q-include, q-note" in text["markup"]
    assert text["no_setup"].startswith(
        "2 of 8 questions (25 %) are answered by no setup (span_recall_1000t 0"
    )
    assert text["same_score"].startswith("5 of 8 questions (62 %) score the same on all 3 setups")
    assert text["effective_sample_size"].startswith("effective sample size 3 of 9 questions")

    # lower limits: the other measures warn too, with what to do
    strict = HealthLimits(keyword_trivial_share=0.1, section_coverage=0.6, short_reference_share=0.2)
    more = {w.measure: w.text for w in health_warnings(health, strict)}
    assert more["keyword_trivial"].startswith("11 % of questions (1 of 9) are keyword-trivial")
    assert "set token_level.generator: llm or excerpt-first" in more["keyword_trivial"]
    assert more["section_coverage"].startswith("4 of 8 sections (50 %) have no question")
    assert more["reference_chars"].startswith(
        "22 % of the references (2 of 9) are shorter than 20 characters"
    )
    # a golden set: the advice is about the golden set, not the generator
    golden = {w.measure: w.text for w in health_warnings(health, strict, generated=False)}
    assert "rephrase them as your users ask" in golden["keyword_trivial"]
    assert "add questions to the golden set" in golden["effective_sample_size"]
    assert "token_level" not in golden["effective_sample_size"]
    # nothing weak at all: no warning
    lenient = HealthLimits(
        duplicate_share=1,
        document_coverage=0,
        no_setup_share=1,
        same_score_share=1,
        effective_sample_size=0,
        code_reference_share=1,
    )
    assert [w.measure for w in health_warnings(health, lenient)] == ["markup"]  # any markup warns


def test_the_per_question_table_and_the_measure_rows():
    health = handmade_health()
    frame = question_frame(health, handmade.examples()).set_index("question_id")
    assert frame.loc["q-alarm", "keyword_trivial"] and not frame.loc["q-valve", "keyword_trivial"]
    assert (
        frame.loc["q-pump", "nearest_question_id"] == "q-pump-2" and frame.loc["q-pump", "has_near_duplicate"]
    )
    assert frame.loc["q-pump", "duplicate_group"] == frame.loc["q-pump-2", "duplicate_group"]
    assert frame.loc["q-note", "markup"] == "admonition,html"
    assert frame.loc["q-plain", ["objective_min", "objective_max"]].tolist() == [0.25, 1.0]
    assert bool(frame.loc["q-plain", "separates"]) and not bool(frame.loc["q-code", "separates"])
    assert frame["separates"].isna().tolist() == [q == "q-valve" for q in frame.index]  # not compared
    row = summary_row(health, health_warnings(health))
    measures = {m: value for m, _, value in measure_rows(row)}
    assert measures["keyword_trivial"] == "1 of 9 (11 %)"
    assert measures["document_coverage"] == "3 of 5 (60 %)"
    assert measures["same_score"] == "5 of 8 (62 %)"
    assert measures["effective_sample_size"] == "3"
    assert [w.measure for w in warnings_of(row)] == [w.measure for w in health_warnings(health)]
