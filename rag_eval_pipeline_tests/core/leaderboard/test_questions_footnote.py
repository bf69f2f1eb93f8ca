"""The known-item caveat: a board evaluated on known-item questions says, under the terminal table, the
markdown and the HTML report, that they favour keyword retrieval; a board on provided questions does
not, nor one written before rows recorded who made their questions."""

from __future__ import annotations

import pandas as pd
import pytest

from rag_eval_pipeline.core.leaderboard.render_html import render_report
from rag_eval_pipeline.core.leaderboard.render_markdown import leaderboard_markdown
from rag_eval_pipeline.core.leaderboard.render_text import format_leaderboard
from rag_eval_pipeline.core.leaderboard.view import footnotes, questions_footnote
from rag_eval_pipeline_tests.chromium import parse_dom
from rag_eval_pipeline_tests.core.leaderboard.boards import NOW, ranked

CAVEAT = (
    "questions: known-item (bags of salient terms, which favour keyword retrieval): prefer an LLM "
    "generator or real questions to compare dense and keyword profiles"
)


def board(*generators: str) -> pd.DataFrame:
    frame = ranked(answers=False)
    frame["question_generators"] = list(generators)
    return frame


def shown(frame: pd.DataFrame) -> dict[str, list[str]]:
    """The footnote lines of each view."""
    text = format_leaderboard(frame).splitlines()
    markdown = [line.removesuffix("  ") for line in leaderboard_markdown(frame).splitlines()]
    html = [
        p.text()
        for p in parse_dom(render_report(frame, pd.DataFrame(), generated_at=NOW)).find_all(
            "p", class_="footnote"
        )
    ]
    return {"text": text, "markdown": markdown, "html": html}


def test_every_view_says_known_item_questions_favour_keyword_retrieval() -> None:
    frame = board(*["known-item-simulation"] * 3)
    assert questions_footnote(frame) == CAVEAT and footnotes(frame)[-1] == CAVEAT
    for view, lines in shown(frame).items():
        assert lines.count(CAVEAT) == 1, view


def test_a_board_partly_on_known_item_questions_says_partly() -> None:
    frame = board("known-item-simulation, provided", "provided", "provided")
    assert questions_footnote(frame) == CAVEAT.replace(
        "questions: known-item", "questions: partly known-item"
    )


@pytest.mark.parametrize("generators", [("provided",) * 3, ("llm-quoted-excerpts",) * 3, ("",) * 3])
def test_no_caveat_for_provided_or_llm_questions_or_unknown_ones(generators: tuple[str, ...]) -> None:
    frame = board(*generators)
    assert questions_footnote(frame) == ""
    for view, lines in shown(frame).items():
        assert not any("known-item" in line for line in lines), view
    assert questions_footnote(ranked(answers=False)) == ""  # no column at all: a board from before
