"""The leaderboard asset's markdown: every headline metric (retrieval as mean [CI], answers as the
mean), the marks and notes of ranking.py, and their legend as markdown line breaks."""

from __future__ import annotations

from rag_eval_pipeline.core.leaderboard.render_markdown import leaderboard_markdown
from rag_eval_pipeline.core.leaderboard.view import footnotes
from rag_eval_pipeline.core.metrics.names import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS
from rag_eval_pipeline_tests.core.leaderboard.boards import ranked


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_markdown_shows_every_headline_metric_and_the_legend() -> None:
    board = ranked(answers=True)
    header, rule, first, quick, removed, blank, *legend = leaderboard_markdown(board).splitlines()
    columns = ["rank", "chunk config", "profile", *HEADLINE_METRICS, *HEADLINE_ANSWER_METRICS, "note"]
    assert cells(header) == columns and rule == "|" + "---|" * len(columns)
    assert cells(first) == [
        "1",
        "fixed",
        "top2",
        *["0.500 [0.400, 0.600]"] * 6,
        "0.250",
        "0.500",
        "0.400",
        "0.750",
        "",
    ]
    assert cells(quick)[:3] == ["*", "recursive", "top2 (quick, 20 questions)"]  # not ranked
    assert cells(quick)[-2:] == ["n/a", "quick run on 20 questions vs full runs"]
    assert cells(removed)[0] == "-" and cells(removed)[-1] == "profile removed"
    assert blank == "" and legend == [f"{line}  " for line in footnotes(board)]


def test_a_board_without_answers_or_notes_shows_them_as_not_available_and_adds_no_legend() -> None:
    board = ranked(answers=False)
    board = board[~board["removed"] & board["rank"].notna()]
    lines = leaderboard_markdown(board).splitlines()
    assert len(lines) == 3 and "note" not in cells(lines[0])
    assert cells(lines[2])[-len(HEADLINE_ANSWER_METRICS) :] == ["n/a"] * len(HEADLINE_ANSWER_METRICS)
