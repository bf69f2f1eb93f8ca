"""The judging files of a workspace (``data/judging/``): one owner for where they are and how they read.

- ``queries.jsonl``: the imported queries (one ``ImportedQuery`` a line), replaced whole on import;
- ``pool.jsonl``: the passages pooled for them (one ``PooledPassage`` a line), replaced whole;
- ``judgements.jsonl``: every judgement ever made, appended, never rewritten: a judge who judges a query
  again adds a line, and the latest line of a (query, judge) pair is that judge's judgement.

JSON lines, so a team can commit them with the documents and read them with any tool. Each write is
atomic under a lock (core/store/files.py): two annotators saving at once both land. A line that does not read
is a DatasetError naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from ..errors import DatasetError
from ..store.files import locked, storage_error, write_text_atomically
from ..types import CharacterSpan, DocumentId
from .types import (
    GRADES,
    JUDGE_KINDS,
    VERDICTS,
    Grade,
    ImportedQuery,
    JudgeKind,
    Judgement,
    JudgeName,
    PooledPassage,
    QueryId,
    Verdict,
)

QUERIES_FILE = "queries.jsonl"
POOL_FILE = "pool.jsonl"
JUDGEMENTS_FILE = "judgements.jsonl"

T = TypeVar("T")


@dataclass(frozen=True)
class JudgingStore:
    """The judging files under ``folder`` (a workspace's ``data/judging``, ProjectFiles.judging_dir)."""

    folder: Path

    @property
    def queries_path(self) -> Path:
        return self.folder / QUERIES_FILE

    @property
    def pool_path(self) -> Path:
        return self.folder / POOL_FILE

    @property
    def judgements_path(self) -> Path:
        return self.folder / JUDGEMENTS_FILE

    def read_queries(self) -> list[ImportedQuery]:
        return read_json_lines(self.queries_path, query_from_json)

    def write_queries(self, queries: Sequence[ImportedQuery]) -> None:
        _write(self.queries_path, (query_to_json(q) for q in queries))

    def read_pool(self) -> list[PooledPassage]:
        return read_json_lines(self.pool_path, passage_from_json)

    def write_pool(self, passages: Sequence[PooledPassage]) -> None:
        _write(self.pool_path, (passage_to_json(p) for p in passages))

    def read_judgements(self) -> list[Judgement]:
        """Every judgement in the order made (the file's order)."""
        return read_json_lines(self.judgements_path, judgement_from_json)

    def append_judgements(self, judgements: Sequence[Judgement]) -> None:
        """Added after the others, under the file's lock (the file is rewritten whole, atomically)."""
        path = self.judgements_path
        with locked(path):
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            if old and not old.endswith("\n"):
                old += "\n"
            new = json_lines(judgement_to_json(j) for j in judgements)
            write_text_atomically(path, old + new)


def latest_judgements(judgements: Iterable[Judgement]) -> list[Judgement]:
    """The latest judgement of each (query, judge), in the order of their first judgement. An LLM judge
    grades one passage per judgement (core/judging/llm_judge.py): its latest is per (query, judge,
    ranges read), so its judgements of a query's other passages stay."""
    latest: dict[tuple[QueryId, JudgeName, tuple[CharacterSpan, ...]], Judgement] = {}
    for judgement in judgements:
        key = (judgement.query_id, judgement.judge, judgement.read if judgement.kind == "llm" else ())
        latest.pop(key, None)
        latest[key] = judgement
    return list(latest.values())


def read_json_lines(
    path: Path, parse: Callable[[Mapping[str, Any]], T], written_by: str = "rag-eval"
) -> list[T]:
    """Each JSON object line of ``path`` parsed (none when it does not exist); a line that does not read
    is a DatasetError naming the file, the line and what is wrong (``written_by``: the command that
    writes the file, for the remedy). Every judging file reads through here."""
    if not path.exists():
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise storage_error(path, "read", exc) from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc}); restore it from version control") from exc
    found = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("a line must be a JSON object")
            found.append(parse(obj))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise DatasetError(
                f"{path}:{number}: {detail}; fix or delete the line (the file is written by {written_by})"
            ) from exc
    return found


def json_lines(objects: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)


def _write(path: Path, objects: Iterable[Mapping[str, Any]]) -> None:
    with locked(path):
        write_text_atomically(path, json_lines(objects))


def _span_to_json(span: CharacterSpan) -> dict[str, Any]:
    return {"doc_id": span.doc_id, "start": span.start, "end": span.end, "text": span.text}


def _span_from_json(obj: Mapping[str, Any]) -> CharacterSpan:
    return CharacterSpan(DocumentId(str(obj["doc_id"])), int(obj["start"]), int(obj["end"]), str(obj["text"]))


def query_to_json(query: ImportedQuery) -> dict[str, Any]:
    return {
        "query_id": query.query_id,
        "text": query.text,
        "count": query.count,
        "variants": list(query.variants),
        "sources": list(query.sources),
        "pii": list(query.pii),
    }


def query_from_json(obj: Mapping[str, Any]) -> ImportedQuery:
    return ImportedQuery(
        QueryId(str(obj["query_id"])),
        str(obj["text"]),
        int(obj.get("count", 1)),
        tuple(str(v) for v in obj.get("variants", ())),
        tuple(str(s) for s in obj.get("sources", ())),
        tuple(str(p) for p in obj.get("pii", ())),
    )


def passage_to_json(passage: PooledPassage) -> dict[str, Any]:
    return {
        "query_id": passage.query_id,
        **_span_to_json(passage.span),
        "document_sha256": passage.document_sha256,
        "found_by": list(passage.found_by),
    }


def passage_from_json(obj: Mapping[str, Any]) -> PooledPassage:
    return PooledPassage(
        QueryId(str(obj["query_id"])),
        _span_from_json(obj),
        str(obj["document_sha256"]),
        tuple(str(f) for f in obj.get("found_by", ())),
    )


def judgement_to_json(judgement: Judgement) -> dict[str, Any]:
    return {
        "query_id": judgement.query_id,
        "judge": judgement.judge,
        "kind": judgement.kind,
        "verdict": judgement.verdict,
        "spans": [_span_to_json(s) for s in judgement.spans],
        "read": [_span_to_json(s) for s in judgement.read],
        "judged_at": judgement.judged_at,
        "documents": dict(judgement.documents),
        "grade": judgement.grade,
        "note": judgement.note,
    }


def judgement_from_json(obj: Mapping[str, Any]) -> Judgement:
    kind, verdict, grade = obj["kind"], obj["verdict"], obj.get("grade")
    if kind not in JUDGE_KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(JUDGE_KINDS)}")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
    if grade is not None and grade not in GRADES:
        raise ValueError(f"grade {grade!r} is not one of {', '.join(map(str, GRADES))}")
    return Judgement(
        QueryId(str(obj["query_id"])),
        JudgeName(str(obj["judge"])),
        cast(JudgeKind, kind),
        cast(Verdict, verdict),
        tuple(_span_from_json(s) for s in obj.get("spans", ())),
        tuple(_span_from_json(s) for s in obj.get("read", ())),
        str(obj["judged_at"]),
        {DocumentId(str(k)): str(v) for k, v in dict(obj.get("documents", {})).items()},
        cast(Grade | None, grade),
        str(obj.get("note", "")),
    )
