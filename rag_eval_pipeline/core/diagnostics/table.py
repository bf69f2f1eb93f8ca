"""The diagnostics as a table: one row per question (``retrieval_diagnostics``), a summary per
partition, and the rows back as what `rag-eval explain` prints.

Shares are fractions of the question's reference characters: per question,
``retrieved_share + sum of the retrieval stages' shares = 1`` exactly in characters (the ``*_chars``
columns are whole numbers that add up), and the answer stages' shares add up to ``retrieved_share``.
A partition's share of a stage is the mean of its questions' shares, so the partition's shares also
add up to 1 and its ``retrieved_share`` is its mean span recall.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import pandas as pd

from ..metrics.names import PRECISION_OMEGA, SPAN_RECALL
from .attribution import ChunkTrace
from .diagnose import Diagnosis, QuestionDiagnosis
from .stages import ANSWER_STAGES, RETRIEVAL_STAGES, THRESHOLD

ORACLE_COLUMNS = (
    "oracle_ranking_recall",
    "oracle_candidates_recall",
    "oracle_chunking_recall",
    "reference_chunks_recall",
    "oracle_k_recall",
)
RETRIEVAL_SHARES = tuple(f"{s}_share" for s in RETRIEVAL_STAGES)
ANSWER_SHARES = tuple(f"{s}_share" for s in ANSWER_STAGES)
# the partition summary's columns the leaderboard and the report show (means over the questions)
SUMMARY_SHARES = ("retrieved_share", *RETRIEVAL_SHARES, f"{THRESHOLD}_share", *ANSWER_SHARES)
NO_LOSS = "none"


def diagnosis_to_frame(diagnosis: Diagnosis, top_k: int) -> pd.DataFrame:
    """One row per question (see the module docstring for the shares)."""
    rows = [_row(q, top_k) for q in diagnosis.questions]
    frame = pd.DataFrame(rows, columns=list(_COLUMNS))
    for column in frame.columns:
        if column.endswith("_chars") or column in ("top_k", "oracle_k"):
            frame[column] = pd.array(frame[column].tolist(), dtype="Int64")
        elif column.endswith("_share") or column.endswith("_recall") or column == PRECISION_OMEGA:
            frame[column] = pd.array(frame[column].tolist(), dtype="Float64")
    return frame


_COLUMNS = (
    "question_id",
    "question",
    "query",
    "top_k",
    "reference_chars",
    "retrieved_chars",
    "missed_chars",
    *(f"{s}_chars" for s in RETRIEVAL_STAGES),
    f"{THRESHOLD}_chars",
    *(f"{s}_chars" for s in ANSWER_STAGES),
    "answer_judged_by",
    "retrieved_share",
    *RETRIEVAL_SHARES,
    f"{THRESHOLD}_share",
    *ANSWER_SHARES,
    "lost_at",
    SPAN_RECALL,
    PRECISION_OMEGA,
    *ORACLE_COLUMNS,
    "oracle_k",
    "reference_spans",
    "segments",
    "chunk_trace",
)


# a trace's fields are plain values: read directly, not through ``asdict``'s deep copy (5x slower)
_TRACE_FIELDS = tuple(f.name for f in fields(ChunkTrace))


def _row(q: QuestionDiagnosis, top_k: int) -> dict[str, Any]:
    a, o = q.attribution, q.oracles
    size = a.reference_chars
    row: dict[str, Any] = {
        "question_id": q.example.question_id,
        "question": q.example.query,
        "query": q.searched,
        "top_k": top_k,
        "reference_chars": size,
        "retrieved_chars": a.retrieved_chars,
        "missed_chars": a.missed_chars,
        f"{THRESHOLD}_chars": a.threshold_chars,
        "answer_judged_by": a.answer.judged_by if a.answer is not None else "",
        "retrieved_share": a.retrieved_chars / size,
        f"{THRESHOLD}_share": a.threshold_chars / size,
        "lost_at": a.lost_at or NO_LOSS,
        SPAN_RECALL: q.span_recall,
        PRECISION_OMEGA: q.precision_omega,
        "oracle_ranking_recall": o.ranking_recall,
        "oracle_candidates_recall": o.candidates_recall,
        "oracle_chunking_recall": o.chunking_recall,
        "reference_chunks_recall": o.reference_chunks_recall,
        "oracle_k_recall": o.k_recall,
        "oracle_k": o.k,
        "reference_spans": json.dumps(
            [[s.doc_id, s.start, s.end, s.text] for s in q.example.relevant_spans], ensure_ascii=False
        ),
        "segments": json.dumps([[s.doc_id, s.start, s.end, s.stage, s.threshold] for s in a.segments]),
        "chunk_trace": json.dumps([{f: getattr(c, f) for f in _TRACE_FIELDS} for c in a.chunks]),
    }
    for stage in RETRIEVAL_STAGES:
        row[f"{stage}_chars"] = a.lost[stage]
        row[f"{stage}_share"] = a.lost[stage] / size
    for answer_stage in ANSWER_STAGES:
        chars = a.answered[answer_stage] if a.answered is not None else None
        row[f"{answer_stage}_chars"] = chars
        row[f"{answer_stage}_share"] = chars / size if chars is not None else None
    return row


def partition_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """One partition's diagnostics: the mean share of each stage, the mean span recall and oracle
    bounds, the median oracle k (over the questions whose ranking holds reference text), how many
    questions each stage lost the most of (``lost_at_<stage>``)."""
    n = len(frame)
    summary: dict[str, Any] = {"n_questions": n}
    for column in (*SUMMARY_SHARES, SPAN_RECALL, *ORACLE_COLUMNS):
        values = (
            frame[column].astype("float64") if column in frame.columns and n else pd.Series(dtype="float64")
        )
        summary[column] = float(values.mean()) if values.notna().any() else float("nan")
    reached = frame["oracle_k"].dropna().astype("int64") if n else pd.Series(dtype="int64")
    summary["oracle_k_median"] = float(reached.median()) if len(reached) else float("nan")
    summary["oracle_k_reached"] = len(reached)
    for stage in RETRIEVAL_STAGES:
        summary[f"lost_at_{stage}"] = int((frame["lost_at"] == stage).sum()) if n else 0
    summary["nothing_lost"] = int((frame["lost_at"] == NO_LOSS).sum()) if n else 0
    summary["answers"] = bool(n and frame["not_cited_chars"].notna().any())
    return summary


def summaries_frame(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The summary of every partition's table (keys as Dagster gives them, ``<chunk config>|<profile>``),
    with ``chunk_config`` and ``profile``, sorted by them; an empty frame for none."""
    rows = []
    for frame in frames.values():
        if frame.empty:
            continue
        first = frame.iloc[0]
        rows.append(
            {
                "chunk_config": str(first["chunk_config"]),
                "profile": str(first["profile"]),
                "top_k": int(first["top_k"]),
                **partition_summary(frame),
            }
        )
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).sort_values(["chunk_config", "profile"], kind="stable").reset_index(drop=True)


def trace_of(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(json.loads(str(row["chunk_trace"])))


def segments_of(row: Mapping[str, Any]) -> list[list[Any]]:
    return list(json.loads(str(row["segments"])))


def reference_spans_of(row: Mapping[str, Any]) -> list[list[Any]]:
    return list(json.loads(str(row["reference_spans"])))
