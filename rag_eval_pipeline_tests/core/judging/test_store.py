"""The judging files: what is written reads back equal, judgements are appended (the latest of a judge
wins), and a line that does not read names the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.judging.store import JudgingStore, latest_judgements
from rag_eval_pipeline.core.judging.types import (
    ImportedQuery,
    Judgement,
    JudgeName,
    PooledPassage,
    QueryId,
    query_id_for,
)
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId

DOC = DocumentId("guide.md")
TEXT = "Deploys happen on Tuesdays. Rollbacks need two approvals."


def span(start: int, end: int) -> CharacterSpan:
    return CharacterSpan(DOC, start, end, TEXT[start:end])


def judgement(judge: str, verdict: str = "answers", at: str = "2026-12-02T10:00:00Z") -> Judgement:
    spans = (span(0, 26),) if verdict == "answers" else ()
    return Judgement(
        QueryId("q-1"),
        JudgeName(judge),
        "human",
        verdict,
        spans,
        (span(0, 57),),
        at,
        {DOC: "abc"},  # type: ignore[arg-type]
    )


def test_what_is_written_reads_back_equal(tmp_path: Path) -> None:
    store = JudgingStore(tmp_path / "judging")
    queries = [
        ImportedQuery(
            query_id_for("When are deploys?"),
            "When are deploys?",
            3,
            ("when r deploys",),
            ("q.csv:2",),
            ("e-mail",),
        )
    ]
    store.write_queries(queries)
    assert store.read_queries() == queries
    pool = [PooledPassage(QueryId("q-1"), span(0, 57), "abc", ("fixed-200-0 x dense-top5 #1",))]
    store.write_pool(pool)
    assert store.read_pool() == pool
    first, second = judgement("ann"), judgement("bob", "unclear")
    store.append_judgements([first])
    store.append_judgements([second])
    assert store.read_judgements() == [first, second]


def test_the_latest_judgement_of_a_judge_wins() -> None:
    early, other, late = (
        judgement("ann"),
        judgement("bob"),
        judgement("ann", "not-answerable", "2026-12-02T11:00:00Z"),
    )
    assert latest_judgements([early, other, late]) == [other, late]


def test_an_llm_judge_has_a_latest_judgement_per_passage() -> None:
    def graded(read: CharacterSpan, grade: int, at: str) -> Judgement:
        return Judgement(
            QueryId("q-1"),
            JudgeName("llm:m"),
            "llm",
            "not-answerable",
            (),
            (read,),
            at,
            {DOC: "abc"},
            grade,  # type: ignore[arg-type]
        )

    first, second = graded(span(0, 27), 0, "t1"), graded(span(28, 57), 1, "t1")
    again = graded(span(0, 27), 1, "t2")
    assert latest_judgements([first, second, again]) == [second, again]


def test_the_same_query_is_one_id_whatever_its_case_and_spacing() -> None:
    assert query_id_for("When are  deploys?") == query_id_for("when are deploys?")
    assert query_id_for("When are deploys?") != query_id_for("When are rollbacks?")


def test_a_bad_line_names_the_file_and_the_line(tmp_path: Path) -> None:
    store = JudgingStore(tmp_path)
    store.append_judgements([judgement("ann")])
    with store.judgements_path.open("a", encoding="utf-8") as f:
        f.write('{"query_id": "q-1", "judge": "x", "kind": "robot", "verdict": "answers"}\n')
    with pytest.raises(DatasetError, match=r"judgements.jsonl:2: kind 'robot' is not one of human, llm"):
        store.read_judgements()


def test_a_verdict_and_its_spans_agree() -> None:
    with pytest.raises(ValueError, match="'answers' needs at least one span"):
        Judgement(QueryId("q"), JudgeName("a"), "human", "answers", (), (), "t")
    with pytest.raises(ValueError, match="only 'answers' selects spans"):
        Judgement(QueryId("q"), JudgeName("a"), "human", "unclear", (span(0, 5),), (), "t")
