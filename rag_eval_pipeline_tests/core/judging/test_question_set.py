"""Judgements as ground truth: how judges combine into one question per query, the golden file they are
written into (earlier exports replaced, hand-written rows kept), read back by the pipeline's loader,
and re-anchored when a document changes."""

from __future__ import annotations

import json
from pathlib import Path

from rag_eval_pipeline.core.judging.question_set import judged_questions, write_into_golden
from rag_eval_pipeline.core.judging.types import ImportedQuery
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl

from .builders import Q1, Q2, Q3, TEXTS, A, B, corpus, find, judgement, span

QUERIES = [
    ImportedQuery(Q1, "How many approvals does a rollback need?", count=7),
    ImportedQuery(Q2, "When do backups run?", count=2),
    ImportedQuery(Q3, "Who owns the coffee machine?"),
]
ROLLBACK = find(A, "Rollbacks need two approvals.")
PAGES = find(A, "The on-call engineer pages the lead.")
BACKUPS = find(B, "Backups run nightly at 02:00.")


def test_people_s_spans_are_joined_and_the_llm_fills_in_only_where_no_person_read() -> None:
    judgements = [
        judgement(Q1, "ann", [span(A, 0, 57)], [ROLLBACK], at="2026-12-01T10:00:00Z"),
        judgement(Q1, "bob", [span(A, 0, 94)], [PAGES], at="2026-12-02T10:00:00Z"),
        # the LLM's span in text a person read is not used; a person read all of a.md
        judgement(Q1, "llm", [span(A, 0, 27)], [span(A, 0, 27)], kind="llm", grade=3),
        # q-2: no person judged it, the LLM's answer is the truth
        judgement(Q2, "llm", [span(B, 0, 29)], [BACKUPS], kind="llm", grade=3, at="2026-12-02T11:00:00Z"),
        # q-3: judged, not answerable: no question
        judgement(Q3, "ann", [span(B, 30, 84)]),
    ]
    found = judged_questions(QUERIES, judgements, corpus())
    q1, q2 = found.examples
    assert (q1.question_id, q1.query) == ("q-1", "How many approvals does a rollback need?")
    assert [(s.start, s.end) for s in q1.relevant_spans] == [
        (ROLLBACK.start, ROLLBACK.end),
        (PAGES.start, PAGES.end),
    ]
    assert dict(q1.metadata) == {
        "source": "judged",
        "count": 7,
        "judges": ["ann", "bob"],
        "judged_at": "2026-12-02T10:00:00Z",
    }
    assert q2.relevant_spans == (BACKUPS,) and q2.metadata["judges"] == ["llm"] and q2.metadata["count"] == 2
    assert found.without_answer == (Q3,)


def test_a_person_s_not_relevant_is_not_overruled_by_the_llm() -> None:
    judgements = [
        judgement(Q2, "ann", [span(B, 0, 84)]),
        judgement(Q2, "llm", [span(B, 0, 29)], [BACKUPS], kind="llm", grade=3),
    ]
    found = judged_questions(QUERIES, judgements, corpus())
    assert found.examples == () and found.without_answer == (Q2,)


def test_a_judged_query_no_longer_imported_is_reported() -> None:
    found = judged_questions(QUERIES[:1], [judgement(Q2, "ann", [BACKUPS], [BACKUPS])], corpus())
    assert found.examples == () and found.not_imported == (Q2,)


def hand_row(question_id: str, query: str, excerpt: str) -> str:
    start = TEXTS[A].index(excerpt)
    return json.dumps(
        {
            "inputs": {"query": query},
            "outputs": {
                "relevant_spans": [
                    {"doc_id": A, "start": start, "end": start + len(excerpt), "text": excerpt}
                ]
            },
            "metadata": {"question_id": question_id},
        }
    )


def test_export_replaces_earlier_judged_rows_keeps_the_others_and_reads_back(tmp_path: Path) -> None:
    golden = tmp_path / "datasets" / "golden_token_level.jsonl"
    golden.parent.mkdir()
    hand = hand_row("hand-1", "When are deploys?", "Deploys happen on Tuesdays.")
    golden.write_text(hand + "\n", encoding="utf-8")
    judgements = [judgement(Q1, "ann", [span(A, 0, 57)], [ROLLBACK])]
    first = write_into_golden(golden, judged_questions(QUERIES, judgements, corpus()).examples)
    assert (first.written, first.replaced, first.kept) == (1, 0, 1)
    # judged again: the export replaces its own rows, the hand-written one stays as written
    judgements.append(judgement(Q2, "bob", [span(B, 0, 29)], [BACKUPS], at="2026-12-03T10:00:00Z"))
    again = write_into_golden(golden, judged_questions(QUERIES, judgements, corpus()).examples)
    assert (again.written, again.replaced, again.kept) == (2, 1, 1)
    lines = golden.read_text(encoding="utf-8").splitlines()
    assert lines[0] == hand
    dataset = read_token_level_jsonl(golden, corpus())
    assert [e.question_id for e in dataset] == ["hand-1", "q-1", "q-2"]
    assert dataset.examples[1].relevant_spans == (ROLLBACK,)
    assert dataset.examples[2].metadata["source"] == "judged" and dataset.examples[2].metadata["count"] == 2


def test_export_into_a_missing_golden_file_creates_it(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    examples = judged_questions(QUERIES, [judgement(Q1, "ann", [ROLLBACK], [ROLLBACK])], corpus()).examples
    assert write_into_golden(golden, examples).written == 1
    assert len(read_token_level_jsonl(golden, corpus())) == 1


def test_after_a_document_edit_judged_spans_are_re_anchored_or_reported_stale(tmp_path: Path) -> None:
    judgements = [
        judgement(Q1, "ann", [span(A, 0, 94)], [ROLLBACK]),
        judgement(Q2, "ann", [span(B, 0, 84)], [BACKUPS]),
    ]
    texts = dict(TEXTS)
    texts[A] = "Release notes first. " + TEXTS[A]
    texts[B] = TEXTS[B].replace("02:00", "03:00")
    edited = corpus(texts)
    found = judged_questions(QUERIES, judgements, edited)
    (q1,) = found.examples
    moved = q1.relevant_spans[0]
    assert moved.start == ROLLBACK.start + 21 and texts[A][moved.start : moved.end] == ROLLBACK.text
    assert found.reanchored == 1
    (stale,) = found.stale
    assert stale.judgement.query_id == Q2 and "no longer occurs in b.md" in stale.reason
    golden = tmp_path / "golden.jsonl"
    write_into_golden(golden, found.examples)
    assert read_token_level_jsonl(golden, edited).examples[0].relevant_spans == (moved,)
