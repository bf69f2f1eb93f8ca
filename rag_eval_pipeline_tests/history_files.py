"""Synthetic history files with known per-question values, written by the warehouse's own writer (as the
IO manager and the warehouse resource write them), for the history, baseline and check tests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd

from rag_eval_pipeline.core.metrics.aggregate import summarize
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse

RETRIEVAL_METRICS = ("span_recall", "span_iou", "recall_at_k", "mrr")
T0 = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def retrieval_rows(
    run_id: str,
    chunk_config: str,
    profile: str,
    values: Mapping[str, Mapping[str, float]],
    created_at: datetime,
    *,
    dataset: str = "data-1",
    evaluation_id: str | None = None,
    mode: str | None = None,
) -> pd.DataFrame:
    """One row per question like retrieval_metrics; ``values[metric][question_id]``. Without
    ``evaluation_id``/``mode`` the rows have no such columns (history written before they existed)."""
    questions = sorted(next(iter(values.values())))
    frame = pd.DataFrame(
        {
            "run_id": run_id,
            "created_at": pd.Timestamp(created_at),
            "chunk_config": chunk_config,
            "profile": profile,
            "top_k": 5,
            "dataset_sha256": dataset,
            "question_id": questions,
            "group": "alpha",
            **{metric: [float(by_q[q]) for q in questions] for metric, by_q in values.items()},
        }
    )
    if evaluation_id is not None:
        frame.insert(1, "evaluation_id", evaluation_id)
    if mode is not None:
        frame.insert(2, "evaluation_mode", mode)
    return frame


def summary_row(frame: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """The retrieval_metrics_summary row of a run, as the asset writes it (bootstrap CI, seed 0)."""
    provenance = [c for c in frame.columns if c not in (*metrics, "question_id", "group")]
    row: dict[str, object] = {c: frame[c].iloc[0] for c in provenance}
    row["n_questions"] = len(frame)
    for metric in metrics:
        s = summarize(frame[metric].tolist(), metric)
        row.update(
            {
                f"{metric}_mean": s.mean,
                f"{metric}_std": s.std,
                f"{metric}_ci_low": s.ci_low,
                f"{metric}_ci_high": s.ci_high,
            }
        )
    return pd.DataFrame([row])


def write_run(
    warehouse: Path, frame: pd.DataFrame, table: str = "retrieval_metrics", summary: bool = True
) -> Path:
    """The run's per-question file (and its summary file) in the history, like a materialization."""
    first = frame.iloc[0]
    partition = {"chunk_config": str(first["chunk_config"]), "profile": str(first["profile"])}
    run_id = str(first["run_id"])
    w = Warehouse(warehouse)
    path = w.write_history(frame, table, partition, run_id)
    if summary and table == "retrieval_metrics":
        metrics = tuple(m for m in RETRIEVAL_METRICS if m in frame.columns)
        w.write_history(summary_row(frame, metrics), RETRIEVAL_SUMMARY, partition, run_id)
    return path


def constant(value: float, questions: int = 10) -> dict[str, float]:
    return {f"q{i:02d}": value for i in range(questions)}
