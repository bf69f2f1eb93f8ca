"""Whether two measurements were made alike: the first difference in the rule's order, in the
leaderboard's words; a value not known never differs."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.core.evaluation.comparability import Basis, question_set, series_breaks

FULL_30 = Basis("", "d1", "full", "s30", 30)


def test_the_first_difference_is_named_in_the_leaderboards_words() -> None:
    assert Basis("", "d1", "full", "s30", 30).difference(FULL_30) == ""
    assert Basis("", "d2", "full", "s29", 29).difference(FULL_30) == "other questions: 29 vs 30"
    assert Basis("", "d2", "full", "s30b", 30).difference(FULL_30) == "other questions: dataset d2 vs d1"
    assert Basis("", "d1", "quick", "s8", 8).difference(FULL_30) == "quick run on 8 questions vs full runs"
    assert Basis("", "d1", "full", "s30b", 30).difference(FULL_30) == "other question sample: set s30b vs s30"
    # other documents come first: such a chunk set is evaluated on other questions, too
    scoped = Basis("2 documents 1a2b3c4d", "d2", "quick", "s8", 8)
    assert scoped.first_difference(FULL_30) == "documents"
    assert (
        scoped.difference(FULL_30) == "other documents: chunk set of 2 documents 1a2b3c4d vs the whole corpus"
    )


def test_what_is_not_known_never_differs() -> None:
    assert Basis(dataset=None, mode=None).difference(FULL_30) == ""
    # rows written before question_set: another number of questions is another sample
    assert (
        Basis("", "d1", "full", None, 29).difference(FULL_30) == "other question sample: 29 vs 30 questions"
    )
    assert Basis("", "d1", "full", None, 30).difference(FULL_30) == ""
    row = {
        "document_scope": float("nan"),
        "dataset_sha256": "d1",
        "evaluation_mode": "full",
        "n_questions": 30.0,
    }
    assert Basis.of(row) == Basis("", "d1", "full", None, 30)


def test_a_series_breaks_where_a_run_differs_from_the_run_before_it() -> None:
    runs = pd.DataFrame(
        {
            "dataset_sha256": ["d1", "d1", "d2", "d2"],
            "evaluation_mode": ["full", "full", "full", "quick"],
            "question_set": ["a", "a", "b", "c"],
            "n_questions": [30, 30, 29, 8],
        }
    )
    assert series_breaks(runs) == [
        "",
        "",
        "other questions: 29 vs 30",
        "quick run on 8 questions vs full runs",
    ]


def test_the_question_set_is_the_sorted_ids() -> None:
    assert question_set(pd.DataFrame({"question_id": ["b", "a"]})) == question_set(
        pd.DataFrame({"question_id": ["a", "b"]})
    )
    assert question_set(pd.DataFrame({"question_id": ["a"]})) != question_set(
        pd.DataFrame({"question_id": ["b"]})
    )
