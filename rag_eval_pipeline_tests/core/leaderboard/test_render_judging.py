"""The report's "Judgements" section, parsed: the counts (imported, judged, exported as questions,
stale), the judges with the LLM judge marked, the agreement of each pair (kappa as computed by hand in
core/judging/test_summary.py, span overlap, with their counts), the stale judgements, and judged@k
left to `rag-eval judgements status`; judge names escaped; no section without a judging summary. Its
markdown for the leaderboard's metadata says the same."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.judging.summary import (
    JUDGED_AT_K_COMMAND,
    JudgeShare,
    JudgingSummary,
    judging_summary,
)
from rag_eval_pipeline.core.judging.types import JudgeName
from rag_eval_pipeline.core.leaderboard.render_html import render_report
from rag_eval_pipeline.core.leaderboard.render_judging import STALE_SHOWN, judging_markdown
from rag_eval_pipeline.core.question_health.report import summary_row
from rag_eval_pipeline_tests.chromium import parse_dom, rendered_dom
from rag_eval_pipeline_tests.core.judging.builders import corpus
from rag_eval_pipeline_tests.core.judging.test_summary import handmade_store
from rag_eval_pipeline_tests.core.leaderboard.test_render_html import NOW, board_frame
from rag_eval_pipeline_tests.core.question_health.test_report import handmade_health


def summary(tmp_path: Path) -> JudgingSummary:
    found = judging_summary(handmade_store(tmp_path / "judging"), corpus)
    assert found is not None
    return found


def test_the_section_shows_the_counts_the_judges_their_agreement_and_the_stale_judgements(tmp_path: Path):
    health = summary_row(handmade_health(), [])
    dom = parse_dom(
        render_report(
            board_frame(), pd.DataFrame(), generated_at=NOW, health=health, judging=summary(tmp_path)
        )
    )
    section = dom.find("section", id="judgements")
    assert section.find("h2").text() == "Judgements"
    # judged@k needs retrieval: the section names the command instead
    assert JUDGED_AT_K_COMMAND in section.find("p", id="judging-intro").text()

    rows = section.find("table", id="judging-counts").find("tbody").find_all("tr")
    values = {r.attrs["data-measure"]: r.find_all("td")[1].text() for r in rows}
    assert values == {
        "queries_imported": "3",
        "queries_judged": "2",
        "questions": "2",
        "judgements": "15",
        "stale": "1",
        "reanchored": "0",
    }

    judges = section.find("table", id="judging-judges").find("tbody").find_all("tr")
    assert [(j.attrs["data-judge"], j.attrs["data-kind"], j.find_all("td")[2].text()) for j in judges] == [
        ("ann", "human", "2"),
        ("bob", "human", "2"),
        ("llm:gpt", "llm", "2"),
    ]

    pairs = section.find("table", id="judging-agreement").find("tbody").find_all("tr")
    cells = [[td.text() for td in p.find_all("td")] for p in pairs]
    assert [(p.attrs["data-judge-a"], p.attrs["data-judge-b"]) for p in pairs] == [
        ("ann", "bob"),
        ("ann", "llm:gpt"),
        ("bob", "llm:gpt"),
    ]
    # judge, judge, queries both judged, passages both read, observed agreement, kappa, queries with a
    # span, span IoU: kappa 0.4, 0.24 / 0.44 and 0.4 by hand (test_summary.py)
    assert cells == [
        ["ann", "bob", "2", "10", "0.70", "0.40", "2", "0.30"],
        ["ann", "llm:gpt (LLM)", "2", "10", "0.80", "0.55", "1", "0.00"],
        ["bob", "llm:gpt (LLM)", "2", "10", "0.70", "0.40", "2", "0.00"],
    ]

    (stale,) = section.find("ul", id="judging-stale").find_all("li")
    assert (stale.attrs["data-query"], stale.attrs["data-judge"]) == ("q-3", "cat")
    assert "'weekly' no longer occurs in b.md" in stale.text()

    # after the board and the health of its questions: how far the judging behind them is
    order = [s.attrs.get("id", s.find("h2").text()) for s in dom.find_all("section")]
    assert order.index("judgements") == order.index("question-health") + 1


def test_without_a_summary_there_is_no_section_and_names_are_escaped(tmp_path: Path):
    assert not parse_dom(render_report(board_frame(), pd.DataFrame(), generated_at=NOW)).find_all(
        "section", id="judgements"
    )
    found = summary(tmp_path)
    odd = JudgeName("<b>eve</b>")
    renamed = replace(
        found,
        judges=(*found.judges, JudgeShare(odd, "human", 1)),
        agreement=(replace(found.agreement[0], judge_b=odd),),
        stale=found.stale * (STALE_SHOWN + 3),
    )
    html = render_report(board_frame(), pd.DataFrame(), generated_at=NOW, judging=renamed)
    section = parse_dom(html).find("section", id="judgements")
    (pair,) = section.find("table", id="judging-agreement").find("tbody").find_all("tr")
    assert pair.attrs["data-judge-b"] == "<b>eve</b>" and not pair.find_all("b")
    stale = section.find("ul", id="judging-stale").find_all("li")
    assert len(stale) == STALE_SHOWN + 1 and stale[-1].text().startswith("and 3 more")


def test_no_pair_says_so_and_the_markdown_says_the_same(tmp_path: Path):
    found = summary(tmp_path)
    markdown = judging_markdown(found)
    assert "- judged queries with an answer: the questions rag-eval judgements export writes: 2" in markdown
    assert "| ann | llm:gpt (LLM) | 2 | 10 | 0.55 | 0.00 |" in markdown
    assert f"`{JUDGED_AT_K_COMMAND}`" in markdown
    alone = replace(found, agreement=())
    assert "No query judged by two judges yet." in judging_markdown(alone)
    section = parse_dom(render_report(board_frame(), pd.DataFrame(), generated_at=NOW, judging=alone)).find(
        "section", id="judgements"
    )
    assert "No query judged by two judges yet" in section.find("p", id="judging-agreement").text()


@pytest.mark.slow  # Chromium
def test_chromium_renders_the_section_with_every_pair(tmp_path: Path):
    page = tmp_path / "report.html"
    page.write_text(
        render_report(board_frame(), pd.DataFrame(), generated_at=NOW, judging=summary(tmp_path)),
        encoding="utf-8",
    )
    section = rendered_dom(page, tmp_path).find("section", id="judgements")
    pairs = section.find("table", id="judging-agreement").find("tbody").find_all("tr")
    assert [p.find("td", data_column="kappa").text() for p in pairs] == ["0.40", "0.55", "0.40"]
    assert section.find("ul", id="judging-stale").find_all("li")
