"""The report's "Question set health" section, parsed: the warnings first (one item each, named by
measure), every measure in a table with the warned ones marked, the closest near-duplicate pairs, the
largest parts without a question; question texts and names escaped; no section without a health row."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from rag_eval_pipeline.core.leaderboard.render_html import render_report
from rag_eval_pipeline.core.question_health.report import (
    health_warnings,
    measure_rows,
    summary_row,
)
from rag_eval_pipeline.core.types import QuestionId
from rag_eval_pipeline_tests.chromium import parse_dom
from rag_eval_pipeline_tests.core.leaderboard.test_render_html import NOW, board_frame
from rag_eval_pipeline_tests.core.question_health.test_report import handmade_health


def test_the_health_section_shows_the_warnings_the_measures_the_pairs_and_the_gaps():
    health = handmade_health()
    # a question text a user wrote, with markup in it: shown as text
    health = replace(health, queries={**health.queries, QuestionId("q-pump-2"): "<b>How fast</b> & why?"})
    warnings = health_warnings(health)
    row = summary_row(health, warnings)
    dom = parse_dom(render_report(board_frame(), pd.DataFrame(), generated_at=NOW, health=row))
    section = dom.find("section", id="question-health")
    assert section.find("h2").text() == "Question set health"

    items = section.find("ul", id="health-warnings").find_all("li")
    assert [i.attrs["data-measure"] for i in items] == [w.measure for w in warnings]
    assert [i.text() for i in items] == [w.text for w in warnings]

    rows = section.find("table", id="health-measures").find("tbody").find_all("tr")
    assert [r.attrs["data-measure"] for r in rows] == [m for m, _, _ in measure_rows(row)]
    marked = {r.attrs["data-measure"] for r in rows if "warned" in r.attrs.get("class", "").split()}
    assert marked == {w.measure for w in warnings}
    values = {r.attrs["data-measure"]: r.find_all("td")[1].text() for r in rows}
    assert values["document_coverage"] == "3 of 5 (60 %)" and values["effective_sample_size"] == "3"

    (pair,) = section.find("table", id="health-duplicates").find("tbody").find_all("tr")
    assert (pair.attrs["data-first"], pair.attrs["data-second"]) == ("q-pump", "q-pump-2")
    assert "<b>How fast</b> & why?" in pair.text() and not pair.find_all("b")
    assert pair.find_all("td")[2].text() == "0.940"

    gaps = section.find("table", id="health-gaps").find("tbody").find_all("tr")
    assert [(g.attrs["data-kind"], g.find_all("td")[1].text()) for g in gaps][:2] == [
        ("document", "notes/unasked.md"),
        ("document", "notes/cooling.md"),
    ]
    assert sum(1 for g in gaps if g.attrs["data-kind"] == "section") == 4
    # the section follows the leaderboard's table: the board, then how far its questions can be trusted
    order = [s.attrs.get("id", s.find("h2").text()) for s in dom.find_all("section")]
    assert order.index("question-health") == order.index("Leaderboard") + 1


def test_a_healthy_set_says_so_and_a_report_without_a_health_row_has_no_section():
    health = handmade_health()
    row = summary_row(health, [])
    section = parse_dom(render_report(board_frame(), pd.DataFrame(), generated_at=NOW, health=row)).find(
        "section", id="question-health"
    )
    assert "No weakness found" in section.find("p", id="health-warnings").text()
    assert not section.find("table", id="health-measures").find_all("tr", class_="warned")
    assert not parse_dom(render_report(board_frame(), pd.DataFrame(), generated_at=NOW)).find_all(
        "section", id="question-health"
    )
