"""Answers and retrieval traces as DataFrames (the Parquet tables the assets store), and back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..metrics.names import CORRECTNESS_METRICS
from ..tables import records
from ..types import ChunkId, QueryTrace, QuestionId, RetrievedChunk
from .agreement import AgreementReport
from .methods import AnswerScores
from .production import OUTCOME_FIELDS, ProductionMetrics
from .threshold import ThresholdChoice
from .types import JUDGE_CRITERIA, Answer, AnswerStatus, Confidence, Criterion, Judgement, MetricOutcome


def answers_to_frame(
    answers: Sequence[Answer], hits: Mapping[QuestionId, Sequence[RetrievedChunk]]
) -> pd.DataFrame:
    """One row per question; the cited chunks' text rides along so a judge needs no other table."""
    texts = {(q, h.chunk_id): h.text for q, chunk_hits in hits.items() for h in chunk_hits}
    return pd.DataFrame(
        {
            "question_id": [a.question_id for a in answers],
            "answer": [a.text for a in answers],
            "cited_chunk_ids": [list(a.cited_chunk_ids) for a in answers],
            "cited_texts": [[texts[(a.question_id, c)] for c in a.cited_chunk_ids] for a in answers],
            "n_cited": pd.array([len(a.cited_chunk_ids) for a in answers], dtype="int64"),
            "invalid_citations": [list(a.invalid_citations) for a in answers],
            "confidence": [a.confidence or "" for a in answers],
            "abstained": [a.abstained for a in answers],
            "answerer": [a.answerer for a in answers],
            "status": [a.status for a in answers],
            "error": [a.error for a in answers],
        }
    )


def answers_from_frame(frame: pd.DataFrame) -> list[Answer]:
    return [
        Answer(
            QuestionId(str(r["question_id"])),
            str(r["answer"]),
            tuple(ChunkId(str(c)) for c in r["cited_chunk_ids"]),
            tuple(str(c) for c in r["invalid_citations"]),
            cast(Confidence, r["confidence"]) if r["confidence"] else None,
            bool(r["abstained"]),
            str(r["answerer"]),
            cast(AnswerStatus, r["status"]),
            str(r["error"]),
        )
        for r in records(frame)
    ]


def cited_texts_from_frame(frame: pd.DataFrame) -> dict[QuestionId, tuple[tuple[ChunkId, str], ...]]:
    return {
        QuestionId(str(r["question_id"])): tuple(
            (ChunkId(str(c)), str(t)) for c, t in zip(r["cited_chunk_ids"], r["cited_texts"], strict=True)
        )
        for r in records(frame[["question_id", "cited_chunk_ids", "cited_texts"]])
    }


def traces_from_frame(frame: pd.DataFrame, queries: Mapping[QuestionId, str]) -> dict[QuestionId, QueryTrace]:
    """How each question was searched, from the retrieval_results rows; a question without hits (or a
    table stored before traces were) gets an empty trace with its own text as the query."""
    traces = {qid: QueryTrace(qid, query) for qid, query in queries.items()}
    if "knn_candidates" not in frame.columns:
        return traces
    for r in records(frame.drop_duplicates("question_id")):
        qid = QuestionId(str(r["question_id"]))
        traces[qid] = QueryTrace(
            qid,
            str(r["query"]),
            rewrite_status=r["rewrite_status"],
            rewrite_error=str(r["rewrite_error"]),
            knn_candidates=_int(r["knn_candidates"]),
            knn_below_threshold=_int(r["knn_below_threshold"]),
            bm25_candidates=_int(r["bm25_candidates"]),
            # tables stored before these columns: unknown, 0
            search_ms=float(r.get("search_ms") or 0.0),
            rewrite_prompt_tokens=_int(r.get("rewrite_prompt_tokens")),
            rewrite_completion_tokens=_int(r.get("rewrite_completion_tokens")),
        )
    return traces


def _int(value: Any) -> int:
    return 0 if value is None or pd.isna(value) else int(value)


def outcome_columns(name: str, outcomes: Sequence[MetricOutcome]) -> dict[str, Any]:
    """A metric as three columns: its value (NaN unless ok), ``<name>_status`` and ``<name>_detail``."""
    return {
        name: pd.array([o.value if o.status == "ok" else None for o in outcomes], dtype="Float64"),
        f"{name}_status": [o.status for o in outcomes],
        f"{name}_detail": [o.detail for o in outcomes],
    }


def ok_mean(frame: pd.DataFrame, name: str) -> float:
    """The mean of a metric over the rows where it is ok; NaN (never 0) when it never applied."""
    return _ok_mean(frame[f"{name}_status"].to_numpy() == "ok", frame, name)


def _ok_mean(ok: npt.NDArray[np.bool_], frame: pd.DataFrame, name: str) -> float:
    """As pandas takes the mean of the ok rows' values (a missing value skipped; their sum over their
    count), on numpy arrays: the per-metric pandas selection was most of an answer summary's cost."""
    values = frame[name].to_numpy(dtype="float64", na_value=np.nan)[ok]
    present = ~np.isnan(values)
    count = int(present.sum())
    return float(np.where(present, values, 0.0).sum() / count) if count else float("nan")


def outcome_summary(frame: pd.DataFrame, names: Sequence[str]) -> dict[str, float | int]:
    """Per metric: the mean over the rows where it is ok, and how many rows were ok/skipped/failed.
    A mean over no row is NaN, never 0."""
    summary: dict[str, float | int] = {}
    for name in names:
        status = frame[f"{name}_status"].to_numpy()
        summary[f"{name}_mean"] = _ok_mean(status == "ok", frame, name)
        for kind in ("ok", "skipped", "failed"):
            summary[f"{name}_n_{kind}"] = int((status == kind).sum())
    return summary


def judgements_to_frame(judgements: Sequence[Judgement], pass_score: float) -> pd.DataFrame:
    """One row per judged answer: the score, each criterion with its explanation, and ``correct``
    (score >= pass_score); a failed judgement keeps its row with the error and no score."""
    frame = pd.DataFrame(
        {
            "question_id": [j.question_id for j in judgements],
            "judge_model": [j.judge_model for j in judgements],
            "status": [j.status for j in judgements],
            "score": pd.array([j.score for j in judgements], dtype="Float64"),
            "correct": pd.array(
                [None if j.score is None else j.score >= pass_score for j in judgements], dtype="boolean"
            ),
        }
    )
    for name in JUDGE_CRITERIA:
        criteria: list[Criterion | None] = [getattr(j, name) for j in judgements]
        frame[name] = pd.array([c.score if c else None for c in criteria], dtype="Float64")
        frame[f"{name}_explanation"] = [c.explanation if c else "" for c in criteria]
    frame["error"] = [j.error for j in judgements]
    frame["attempts"] = pd.array([j.attempts for j in judgements], dtype="int64")
    return frame


def answer_metrics_frame(
    scores: Sequence[AnswerScores], production: Sequence[ProductionMetrics]
) -> pd.DataFrame:
    """One row per question: each correctness method and each production metric as value, status and
    detail columns; ``semantic_validation`` is the verdict (pass / fail / skipped / failed)."""
    by_question = {row.question_id: row for row in production}
    rows = []
    for score in scores:
        row: dict[str, Any] = {"question_id": score.question_id}
        for name in CORRECTNESS_FIELDS:
            outcome: MetricOutcome = getattr(score, name)
            row.update(
                {name: outcome.value, f"{name}_status": outcome.status, f"{name}_detail": outcome.detail}
            )
        judgement = score.hybrid_judgement
        row["hybrid_judge_score"] = judgement.score if judgement is not None else None
        record = by_question[score.question_id].as_record()
        record.pop("question_id")
        record["semantic_validation_pass_rate"] = record.pop("semantic_validation")
        for suffix in ("_status", "_detail"):
            record[f"semantic_validation_pass_rate{suffix}"] = record.pop(f"semantic_validation{suffix}")
        record["semantic_validation"] = record.pop("semantic_verdict")
        rows.append({**row, **record})
    frame = pd.DataFrame(rows)
    for name in (*CORRECTNESS_FIELDS, "hybrid_judge_score", *PRODUCTION_VALUE_FIELDS):
        frame[name] = pd.array(frame[name].tolist(), dtype="Float64")
    return frame


CORRECTNESS_FIELDS = CORRECTNESS_METRICS
PRODUCTION_VALUE_FIELDS = tuple(
    "semantic_validation_pass_rate" if name == "semantic_validation" else name for name in OUTCOME_FIELDS
)


def calibration_to_frame(
    report: AgreementReport, labels_file: str, n_labels: int, n_unmatched: int
) -> pd.DataFrame:
    """One row per method with its agreement with the human labels; every row also carries the
    threshold ``semantic_dynamic`` uses from now on and why."""
    t = report.threshold
    return pd.DataFrame(
        {
            "method": [a.method for a in report.agreements],
            "n": [a.n for a in report.agreements],
            "n_skipped": [a.n_skipped for a in report.agreements],
            "n_failed": [a.n_failed for a in report.agreements],
            "accuracy": pd.array([a.accuracy for a in report.agreements], dtype="Float64"),
            "cohen_kappa": pd.array([a.cohen_kappa for a in report.agreements], dtype="Float64"),
            "threshold": t.threshold,
            "threshold_how": t.how,
            "threshold_reason": t.reason,
            "threshold_objective": t.objective,
            "threshold_score": t.score,
            "threshold_n": t.n,
            "labels_file": labels_file,
            "n_labels": n_labels,
            "n_labels_unmatched": n_unmatched,
        }
    )


def threshold_from_frame(frame: pd.DataFrame) -> ThresholdChoice:
    first = frame.iloc[0]
    return ThresholdChoice(
        float(first["threshold"]),
        first["threshold_how"],
        str(first["threshold_reason"]),
        first["threshold_objective"],
        None if pd.isna(first["threshold_score"]) else float(first["threshold_score"]),
        int(first["threshold_n"]),
    )
