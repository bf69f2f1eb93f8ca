"""The duplicated-reference warning: a board whose questions have references in text the corpus holds
more than once says so, with the counts, under the terminal table, the markdown and the HTML report; a
board without such references does not, nor one written before the counts existed."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.core.leaderboard.view import duplication_footnote, footnotes
from rag_eval_pipeline_tests.core.leaderboard.boards import ranked
from rag_eval_pipeline_tests.core.leaderboard.test_questions_footnote import shown

WARNING = (
    "duplicated reference text: 3 of 85 questions have references whose text occurs elsewhere in the "
    "corpus too (4 references, 6 extra copies): the position-exact span metrics score a retrieved "
    "copy 0, the span_*_copies metrics count it"
)


def board(questions: list[object], references: list[object], extra: list[object]) -> pd.DataFrame:
    frame = ranked(answers=False)
    frame["questions_with_duplicated_references"] = pd.array(questions, dtype="Int64")
    frame["duplicated_references"] = pd.array(references, dtype="Int64")
    frame["extra_reference_copies"] = pd.array(extra, dtype="Int64")
    return frame


def test_every_view_warns_with_the_counts_of_the_fullest_row() -> None:
    # rows in board order: fixed x top2 (85 questions), recursive x top2 (quick, 20), fixed x old (85)
    frame = board([3, 1, None], [4, 1, None], [6, 1, None])
    assert duplication_footnote(frame) == WARNING and footnotes(frame)[-1] == WARNING
    for view, lines in shown(frame).items():
        assert lines.count(WARNING) == 1, view


def test_no_warning_without_duplicated_references_or_counts() -> None:
    frame = board([0, 0, 0], [0, 0, 0], [0, 0, 0])
    assert duplication_footnote(frame) == ""
    for view, lines in shown(frame).items():
        assert not any("duplicated reference" in line for line in lines), view
    assert duplication_footnote(board([None] * 3, [None] * 3, [None] * 3)) == ""  # rows from before
    assert duplication_footnote(ranked(answers=False)) == ""  # no column at all
