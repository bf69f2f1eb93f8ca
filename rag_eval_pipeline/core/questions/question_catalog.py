"""The evaluation questions as a catalogue: what `rag-eval questions list|stats` shows, and the question
type each metrics row carries so results can be filtered by it.

Read from the ``eval_questions`` table (golden and synthetic questions as the evaluation uses them,
stale ones included with their status). A question's type is its metadata's ``question_type``
(``factual`` ... in the golden set, ``known-item``, ``single-document``, ``cross-document`` from the
generators); a question without one is ``unspecified``. Its documents are those its reference spans
lie in: a question about two documents is listed, and counted, under each.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..tables import GROUND_TRUTH_STATUS, STALE, records

UNSPECIFIED = "unspecified"


def question_type_of(metadata: Mapping[str, Any]) -> str:
    value = metadata.get("question_type")
    return str(value) if isinstance(value, str) and value.strip() else UNSPECIFIED


@dataclass(frozen=True)
class CatalogQuestion:
    question_id: str
    question_type: str
    documents: tuple[str, ...]
    query: str
    source: str  # the dataset it comes from: golden, synthetic, both (eval_questions' ``dataset``)
    generator: str  # who wrote it: the generator, or the golden file's ``source`` (hand-written ...)
    status: str  # ok, reanchored, stale (ground truth against the current corpus)

    def record(self) -> dict[str, object]:
        return {
            "question_id": self.question_id,
            "type": self.question_type,
            "documents": list(self.documents),
            "status": self.status,
            "generator": self.generator,
            "question": self.query,
        }


def catalog(eval_questions: pd.DataFrame) -> list[CatalogQuestion]:
    """Every row of an eval_questions table, in its order (golden first, then synthetic, then stale)."""
    questions = []
    for row in records(eval_questions):
        metadata = json.loads(str(row.get("metadata_json") or "{}"))
        spans = row.get("relevant_spans")
        documents = tuple(dict.fromkeys(str(s["doc_id"]) for s in (spans if spans is not None else ())))
        status = row.get(GROUND_TRUTH_STATUS)
        questions.append(
            CatalogQuestion(
                question_id=str(row["question_id"]),
                question_type=question_type_of(metadata),
                documents=documents,
                query=str(row["query"]),
                source=str(row.get("dataset") or ""),
                generator=str(metadata.get("generator") or metadata.get("source") or ""),
                status=str(status) if isinstance(status, str) else "ok",
            )
        )
    return questions


def filter_questions(
    questions: Sequence[CatalogQuestion],
    types: Collection[str] = (),
    documents: Collection[str] = (),
) -> list[CatalogQuestion]:
    """The questions of any of ``types`` (case-insensitive) about any of ``documents`` (doc ids or
    globs such as ``ops/*.md``); an empty filter keeps every question."""
    wanted_types = {t.lower() for t in types}
    return [
        q
        for q in questions
        if (not wanted_types or q.question_type.lower() in wanted_types)
        and (not documents or any(fnmatchcase(d, p) for d in q.documents for p in documents))
    ]


@dataclass(frozen=True)
class QuestionStats:
    """Counts over the questions evaluated (stale ones apart: they are not evaluated)."""

    total: int
    stale: int
    by_type: Mapping[str, int]
    by_document: Mapping[str, int]  # a question about two documents counts under each
    multi_document: int

    def records(self) -> list[dict[str, object]]:
        """One row per count: (group, key, questions): what the table, CSV and JSON forms show."""
        rows: list[dict[str, object]] = [
            {"group": "total", "key": "questions", "questions": self.total},
            {"group": "total", "key": "about two or more documents", "questions": self.multi_document},
            {"group": "total", "key": "stale (not evaluated)", "questions": self.stale},
        ]
        rows += [{"group": "type", "key": k, "questions": v} for k, v in self.by_type.items()]
        rows += [{"group": "document", "key": k, "questions": v} for k, v in self.by_document.items()]
        return rows


def question_stats(questions: Sequence[CatalogQuestion]) -> QuestionStats:
    evaluated = [q for q in questions if q.status != STALE]
    by_type = Counter(q.question_type for q in evaluated)
    by_document = Counter(d for q in evaluated for d in q.documents)
    return QuestionStats(
        total=len(evaluated),
        stale=len(questions) - len(evaluated),
        by_type=dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
        by_document=dict(sorted(by_document.items())),
        multi_document=sum(1 for q in evaluated if len(q.documents) > 1),
    )


def check_question_filters(
    questions: Sequence[CatalogQuestion], types: Sequence[str], documents: Sequence[str]
) -> None:
    """A filter value no question has is named, with what there is: a typo must not read as "none"."""
    known_types = sorted({q.question_type for q in questions})
    for value in types:
        if value.lower() not in {t.lower() for t in known_types}:
            raise ConfigError(
                f"--type {value}: no question has that type; the types: {', '.join(known_types)}"
            )
    for value in documents:
        if not filter_questions(questions, documents=[value]):
            known = sorted({d for q in questions for d in q.documents})
            shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
            raise ConfigError(
                f"--document {value}: no question is about that document; questions are about: {shown}"
            )
