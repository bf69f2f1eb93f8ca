"""Judgements as ground truth: one token-level question per judged query with an answer, and the golden
dataset they are written into.

How several judges combine, per query (every judge's judgements first layered, core/judging/judge_views.py):
- the people's word is the truth: the union of every human judge's answering spans (two annotators
  who each found a part of the answer both count; one who found none does not remove the other's);
- the LLM judge fills in only where no person judged: its spans minus every range a human judge read.
  So a query judged by people alone, by the LLM alone, or by people on the first pool and by the LLM on
  what a new chunk config added, each gets the best truth there is, and a person's "not relevant"
  is never overruled by the LLM;
- a query is a question when that leaves at least one span; a query only judged "answered elsewhere",
  "not answerable" or "unclear" is none (nothing to score retrieval against).

Judgements are re-anchored to the corpus first (core/judging/reanchor.py): a stale one is reported and
left out, never used with offsets that no longer point at its text.

Each question: ``question_id`` the query id, the query as imported, metadata ``count`` (its traffic:
the weight of traffic-weighted metrics), ``judges`` (whose spans made the truth), ``judged_at`` (the
latest of their judgements) and ``source: "judged"``. Written into the golden file by
``write_into_golden``: rows from an earlier export (``source: judged``, or a question id the judged set
uses) are replaced, every other row (hand-written, imported) is kept as it is, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..corpus.corpus import Corpus
from ..questions.datasets import TokenLevelExample, default_question_id, read_jsonl_objects
from ..redaction import redact_value
from ..spans import Merged
from ..store.files import write_text_atomically
from ..types import QuestionId
from .intervals import spans_of, subtract, union
from .judge_views import JudgeView, judge_views
from .reanchor import StaleJudgement, anchor_judgements
from .types import ImportedQuery, Judgement, QueryId

JUDGED_SOURCE = "judged"


@dataclass(frozen=True)
class JudgedQuestions:
    """The questions, and what did not become one (each said, none silently dropped)."""

    examples: tuple[TokenLevelExample, ...]
    stale: tuple[StaleJudgement, ...] = ()
    reanchored: int = 0  # usable judgements whose ranges moved with an edit
    without_answer: tuple[QueryId, ...] = ()  # judged, but no span stands (not answerable, ...)
    not_imported: tuple[QueryId, ...] = ()  # judged queries no longer in queries.jsonl (text unknown)


def judged_questions(
    queries: Sequence[ImportedQuery], judgements: Iterable[Judgement], corpus: Corpus
) -> JudgedQuestions:
    """One question per imported query whose combined truth has a span, in the queries' order."""
    anchored = anchor_judgements(judgements, corpus)
    views = judge_views(anchored.usable)
    texts = {d.doc_id: d.text for d in corpus}
    examples = []
    without_answer = []
    for query in queries:
        query_views = views.get(query.query_id)
        if not query_views:
            continue
        spans, judges = combined_spans(query_views)
        if not spans:
            without_answer.append(query.query_id)
            continue
        metadata: dict[str, Any] = {
            "source": JUDGED_SOURCE,
            "count": query.count,
            "judges": [v.judge for v in judges],
            "judged_at": max(v.judged_at for v in judges),
        }
        examples.append(
            TokenLevelExample(QuestionId(query.query_id), query.text, spans_of(spans, texts), metadata)
        )
    imported = {q.query_id for q in queries}
    return JudgedQuestions(
        tuple(examples),
        anchored.stale,
        anchored.reanchored,
        tuple(without_answer),
        tuple(q for q in views if q not in imported),
    )


def combined_spans(views: Sequence[JudgeView]) -> tuple[Merged, list[JudgeView]]:
    """The truth of one query (see the module docstring) and the judges whose spans are in it."""
    people = [v for v in views if v.kind == "human"]
    machines = [v for v in views if v.kind == "llm"]
    human_read = union(*(v.read for v in people))
    found = union(*(v.spans for v in people))
    judges = [v for v in people if v.spans]
    for view in machines:
        extra = subtract(view.spans, human_read)
        if extra:
            found = union(found, extra)
            judges.append(view)
    return found, judges


@dataclass(frozen=True)
class GoldenWrite:
    path: Path
    written: int  # judged questions written
    replaced: int  # rows of the file replaced (an earlier export, or the same question id)
    kept: int  # other rows kept as they were


def write_into_golden(path: Path, examples: Sequence[TokenLevelExample]) -> GoldenWrite:
    """The judged questions written into the golden JSONL at ``path`` (created when missing): its rows
    from an earlier export replaced, every other row kept as written (not re-validated: the pipeline's
    loader re-anchors hand-written rows with its own ledger). Written to a temporary name and renamed,
    as ``write_jsonl`` writes datasets."""
    ids = {e.question_id for e in examples}
    kept_lines: list[str] = []
    replaced = 0
    for line, obj in _rows(path):
        metadata = _object(obj.get("metadata"))
        query = _object(obj.get("inputs")).get("query")
        question_id = str(metadata.get("question_id") or default_question_id(str(query)))
        if metadata.get("source") == JUDGED_SOURCE or question_id in ids:
            replaced += 1
        else:
            kept_lines.append(line)
    new_lines = [json.dumps(redact_value(e.to_json()), ensure_ascii=False) for e in examples]
    write_text_atomically(path, "".join(f"{line}\n" for line in (*kept_lines, *new_lines)))
    return GoldenWrite(path, len(examples), replaced, len(kept_lines))


def _rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(line as written, object) for each row of the golden file; none when it is missing or blank."""
    if not path.exists() or not path.read_text(encoding="utf-8").strip():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(lines[number - 1], obj) for number, obj in read_jsonl_objects(path)]


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
