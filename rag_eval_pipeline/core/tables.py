"""The tabular form of core objects, as stored in Parquet and passed between Dagster assets."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

import numpy as np
import pandas as pd

from .corpus.corpus import Corpus
from .questions.datasets import ChunkLevelDataset, ChunkLevelExample, TokenLevelDataset, TokenLevelExample
from .types import (
    CharacterSpan,
    ChunkId,
    Document,
    DocumentId,
    PositionAwareChunk,
    QueryTrace,
    QuestionId,
    Rejection,
    RetrievedChunk,
)

CHUNK_COLUMNS = ["chunk_id", "doc_id", "start", "end", "text"]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts (what the core takes), column names as keys."""
    return cast(list[dict[str, Any]], frame.to_dict("records"))


def json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (`--format json`, the HTTP API): times as ISO text, NaN as None."""
    return [{str(k): json_value(v) for k, v in row.items()} for row in records(frame)]


def json_value(value: Any) -> Any:
    """A cell as JSON takes it."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def corpus_to_frame(corpus: Corpus) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "doc_id": [d.doc_id for d in corpus],
            "group": [d.group for d in corpus],
            "n_chars": [len(d.text) for d in corpus],
            "sha256": [d.sha256 for d in corpus],
            "text": [d.text for d in corpus],
        }
    )


def corpus_from_frame(frame: pd.DataFrame, root: str = "") -> Corpus:
    return Corpus(
        tuple(
            Document(DocumentId(str(r["doc_id"])), str(r["text"]), str(r["group"])) for r in records(frame)
        ),
        root=root,
    )


def chunks_to_frame(chunks: Sequence[PositionAwareChunk]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "chunk_id": [c.chunk_id for c in chunks],
            "doc_id": [c.doc_id for c in chunks],
            "start": pd.array([c.start for c in chunks], dtype="int64"),
            "end": pd.array([c.end for c in chunks], dtype="int64"),
            "n_chars": pd.array([c.end - c.start for c in chunks], dtype="int64"),
            "text": [c.text for c in chunks],
        }
    )


def chunks_from_frame(frame: pd.DataFrame) -> list[PositionAwareChunk]:
    return [
        PositionAwareChunk(
            ChunkId(str(r["chunk_id"])),
            DocumentId(str(r["doc_id"])),
            int(r["start"]),
            int(r["end"]),
            str(r["text"]),
        )
        for r in records(frame[CHUNK_COLUMNS])
    ]


def questions_to_frame(dataset: TokenLevelDataset) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": [e.question_id for e in dataset],
            "query": [e.query for e in dataset],
            "relevant_spans": [
                [
                    {"doc_id": s.doc_id, "start": s.start, "end": s.end, "text": s.text}
                    for s in e.relevant_spans
                ]
                for e in dataset
            ],
            "n_documents": [len({s.doc_id for s in e.relevant_spans}) for e in dataset],
            "metadata_json": [
                json.dumps(dict(e.metadata), sort_keys=True, ensure_ascii=False) for e in dataset
            ],
            **_answer_columns(dataset.examples),
            "dataset": dataset.name,
            "dataset_sha256": dataset.sha256,
            "answers_sha256": dataset.answers_sha256,
        }
    )


def _answer_columns(examples: Sequence[TokenLevelExample | ChunkLevelExample]) -> dict[str, Any]:
    """``reference_answer`` (str or None; object dtype, so None is not turned into NaN) and
    ``expected_keywords`` (a list of strings, empty when there are none)."""
    return {
        "reference_answer": pd.Series([e.reference_answer for e in examples], dtype=object),
        "expected_keywords": [list(e.expected_keywords) for e in examples],
    }


def _answer_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """The answer fields of a row as example keyword arguments. A frame written before the columns
    existed has neither; after Parquet a missing answer may read back as NaN and keywords as an array."""
    answer = row.get("reference_answer")
    keywords = row.get("expected_keywords")
    return {
        "reference_answer": str(answer) if isinstance(answer, str) else None,
        "expected_keywords": (
            tuple(str(k) for k in keywords) if isinstance(keywords, (list, tuple, np.ndarray)) else ()
        ),
    }


def questions_from_frame(frame: pd.DataFrame) -> TokenLevelDataset:
    """The accepted questions (a generated dataset's frame also holds its rejected rows), without the
    stale ones (eval_questions keeps them as rows, with the reason, but they are not evaluated)."""
    if "status" in frame.columns:
        frame = frame[frame["status"] == ACCEPTED]
    if GROUND_TRUTH_STATUS in frame.columns:
        frame = frame[frame[GROUND_TRUTH_STATUS] != STALE]
    examples = tuple(
        TokenLevelExample(
            QuestionId(str(r["question_id"])),
            str(r["query"]),
            tuple(
                CharacterSpan(DocumentId(str(s["doc_id"])), int(s["start"]), int(s["end"]), str(s["text"]))
                for s in r["relevant_spans"]
            ),
            json.loads(str(r["metadata_json"])),
            **_answer_fields(r),
        )
        for r in records(frame)
    )
    name = str(frame["dataset"].iloc[0]) if len(frame) else "token-level"
    return TokenLevelDataset(examples, name=name)


# eval_questions' column saying whether a question's spans match the corpus (see core/questions/reanchor.py).
GROUND_TRUTH_STATUS, STALE = "ground_truth_status", "stale"


def stale_question_count(frame: pd.DataFrame) -> int:
    """How many questions of an eval_questions frame are stale (0 for a frame without the column)."""
    if GROUND_TRUTH_STATUS not in frame.columns:
        return 0
    return int((frame[GROUND_TRUTH_STATUS] == STALE).sum())


def retrieved_to_frame(
    results: dict[QuestionId, list[RetrievedChunk]], traces: Mapping[QuestionId, QueryTrace] | None = None
) -> pd.DataFrame:
    """One row per retrieved chunk; with ``traces``, each row also says how its question was searched."""
    rows = [r for hits in results.values() for r in hits]
    frame = pd.DataFrame(
        {
            "question_id": [r.question_id for r in rows],
            "rank": pd.array([r.rank for r in rows], dtype="int64"),
            "chunk_id": [r.chunk_id for r in rows],
            "doc_id": [r.doc_id for r in rows],
            "start": pd.array([r.start for r in rows], dtype="int64"),
            "end": pd.array([r.end for r in rows], dtype="int64"),
            "score": pd.array([r.score for r in rows], dtype="float64"),
            "text": [r.text for r in rows],
            "found_by": [r.found_by for r in rows],
            **{
                column: pd.array([getattr(r, column) for r in rows], dtype="Int64")
                for column in _RANK_COLUMNS
            },
            **{
                column: pd.array([getattr(r, column) for r in rows], dtype="Float64")
                for column in _SCORE_COLUMNS
            },
        }
    )
    if traces is not None:
        for column in _TRACE_COLUMNS:
            frame[column] = [getattr(traces[r.question_id], column) for r in rows]
    return frame


_RANK_COLUMNS = ("knn_rank", "bm25_rank")
_SCORE_COLUMNS = ("knn_score", "bm25_score", "fused_score", "rerank_score")
_TRACE_COLUMNS = (
    "query",
    "rewrite_status",
    "rewrite_error",
    "knn_candidates",
    "knn_below_threshold",
    "bm25_candidates",
    "search_ms",
    "rewrite_prompt_tokens",
    "rewrite_completion_tokens",
)


def _optional(value: Any, kind: type[int] | type[float]) -> Any:
    return None if value is None or pd.isna(value) else kind(value)


def retrieved_from_frame(frame: pd.DataFrame) -> dict[QuestionId, list[RetrievedChunk]]:
    """Each question's retrieved chunks in rank order. Read column by column, only the columns a
    ``RetrievedChunk`` holds: the table also carries each query's trace, and turning every row of it into
    a dict cost 0.2 s per read of a demo partition, read by four assets."""
    ordered = frame.sort_values(["question_id", "rank"], kind="stable")
    n = len(ordered)

    def column(name: str, default: Any = None) -> list[Any]:
        return ordered[name].tolist() if name in ordered.columns else [default] * n

    optional = [(c, int, column(c)) for c in _RANK_COLUMNS] + [(c, float, column(c)) for c in _SCORE_COLUMNS]
    results: dict[QuestionId, list[RetrievedChunk]] = {}
    rows = zip(
        *(column(c) for c in ("question_id", "rank", "chunk_id", "doc_id", "start", "end", "score", "text")),
        column("found_by", "knn"),
        strict=True,
    )
    for i, (question_id, rank, chunk_id, doc_id, start, end, score, text, found_by) in enumerate(rows):
        qid = QuestionId(str(question_id))
        results.setdefault(qid, []).append(
            RetrievedChunk(
                qid,
                int(rank),
                ChunkId(str(chunk_id)),
                DocumentId(str(doc_id)),
                int(start),
                int(end),
                float(score),
                str(text),
                found_by=found_by,
                **{name: _optional(values[i], kind) for name, kind, values in optional},
            )
        )
    return results


ACCEPTED, REJECTED = "accepted", "rejected"


def _with_status(frame: pd.DataFrame) -> pd.DataFrame:
    frame["source_doc_ids"] = [
        sorted({str(d) for d in json.loads(m).get("source_doc_ids") or []}) for m in frame["metadata_json"]
    ]
    frame["status"] = ACCEPTED
    frame["reason"] = ""
    frame["detail"] = ""
    return frame


def rejections_to_frame(rejections: Sequence[Rejection], columns: Sequence[str]) -> pd.DataFrame:
    """Rejected questions as rows of a generated dataset's table: nothing is dropped without a trace."""
    rows = [
        {
            "question_id": str(r.metadata.get("question_id", "")),
            "query": r.question or "",
            "metadata_json": json.dumps(dict(r.metadata), sort_keys=True, ensure_ascii=False, default=str),
            "source_doc_ids": list(r.source_doc_ids),
            "source_chunk_ids": list(r.source_chunk_ids),
            "status": REJECTED,
            "reason": r.reason,
            "detail": r.detail,
        }
        for r in rejections
    ]
    return pd.DataFrame(rows).reindex(columns=list(columns))


def generated_token_level_to_frame(
    dataset: TokenLevelDataset, rejections: Sequence[Rejection]
) -> pd.DataFrame:
    accepted = _with_status(questions_to_frame(dataset))
    rejected = rejections_to_frame(rejections, list(accepted.columns))
    rejected["relevant_spans"] = [[] for _ in range(len(rejected))]
    _no_answers(rejected)
    rejected["n_documents"] = [len(ids) for ids in rejected["source_doc_ids"]]
    rejected["dataset"] = dataset.name
    rejected["dataset_sha256"] = dataset.sha256
    rejected["answers_sha256"] = dataset.answers_sha256
    return _concat(accepted, rejected)


def chunk_questions_to_frame(
    dataset: ChunkLevelDataset, rejections: Sequence[Rejection] = ()
) -> pd.DataFrame:
    accepted = _with_status(
        pd.DataFrame(
            {
                "question_id": [e.question_id for e in dataset],
                "query": [e.query for e in dataset],
                "relevant_chunk_ids": [list(e.relevant_chunk_ids) for e in dataset],
                "metadata_json": [
                    json.dumps(dict(e.metadata), sort_keys=True, ensure_ascii=False) for e in dataset
                ],
                **_answer_columns(dataset.examples),
            }
        )
    )
    columns = [*accepted.columns, "source_chunk_ids"]
    accepted["source_chunk_ids"] = [list(e.relevant_chunk_ids) for e in dataset]
    rejected = rejections_to_frame(rejections, columns)
    rejected["relevant_chunk_ids"] = [[] for _ in range(len(rejected))]
    _no_answers(rejected)
    frame = _concat(accepted[columns], rejected)
    frame["dataset"] = dataset.name
    frame["dataset_sha256"] = dataset.sha256
    frame["answers_sha256"] = dataset.answers_sha256
    frame["chunker_fingerprint"] = dataset.chunker_fingerprint
    return frame


def chunk_questions_from_frame(frame: pd.DataFrame) -> ChunkLevelDataset:
    accepted = frame[frame["status"] == ACCEPTED]
    examples = tuple(
        ChunkLevelExample(
            QuestionId(str(r["question_id"])),
            str(r["query"]),
            tuple(ChunkId(str(c)) for c in r["relevant_chunk_ids"]),
            json.loads(str(r["metadata_json"])),
            **_answer_fields(r),
        )
        for r in records(accepted)
    )
    first = frame.iloc[0] if len(frame) else None
    return ChunkLevelDataset(
        examples,
        str(first["chunker_fingerprint"]) if first is not None else "",
        name=str(first["dataset"]) if first is not None else "chunk-level",
    )


def _no_answers(rejected: pd.DataFrame) -> None:
    """A rejected question has no answer: None and [] rather than the NaN a reindex leaves."""
    rejected["reference_answer"] = pd.Series([None] * len(rejected), index=rejected.index, dtype=object)
    rejected["expected_keywords"] = [[] for _ in range(len(rejected))]


def _concat(accepted: pd.DataFrame, rejected: pd.DataFrame) -> pd.DataFrame:
    if rejected.empty:
        return accepted.reset_index(drop=True)
    if accepted.empty:
        return rejected.reset_index(drop=True)
    return pd.concat([accepted, rejected], ignore_index=True)
