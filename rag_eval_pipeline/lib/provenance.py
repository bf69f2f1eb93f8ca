"""The provenance columns every table row carries: run, evaluation and mode, time, and the hashes of
what produced it, so two runs are comparable or visibly not."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa

from ..core.tables import questions_from_frame
from .evaluation_runs import EvaluationModeResource, evaluation_id_of
from .step_failures import input_errors_fail_the_step


def now_utc() -> datetime:
    return datetime.now(UTC)


def with_columns(frame: pd.DataFrame, **columns: Any) -> pd.DataFrame:
    """Provenance first (run id, partition, hashes), then the data columns."""
    front = pd.DataFrame({name: [value] * len(frame) for name, value in columns.items()}, index=frame.index)
    return pd.concat([front, frame], axis=1)


def dataset_hashes(eval_questions: pd.DataFrame) -> dict[str, str]:
    """The hashes of the whole evaluated dataset, also in quick mode (not of the sample): what makes a
    quick run comparable with the full runs before it."""
    if {"dataset_sha256", "answers_sha256"} <= set(eval_questions.columns) and len(eval_questions):
        first = eval_questions.iloc[0]
        return {
            "dataset_sha256": str(first["dataset_sha256"]),
            "answers_sha256": str(first["answers_sha256"]),
        }
    questions = questions_from_frame(eval_questions)
    return {"dataset_sha256": questions.sha256, "answers_sha256": questions.answers_sha256}


def evaluation_columns(
    context: dg.AssetExecutionContext, evaluation: EvaluationModeResource
) -> dict[str, str]:
    """Which evaluation a row belongs to and in which mode: what `rag-eval compare` and the regression
    checks group and filter by."""
    with input_errors_fail_the_step():
        mode = evaluation.checked_mode()
    return {"evaluation_id": evaluation_id_of(context.run), "evaluation_mode": mode}


# Columns that differ between two runs computing the same result: who ran it and when, what it cost, and
# how long each question's search took (a latency, measured anew on every run).
VOLATILE_COLUMNS = frozenset(
    {
        "search_ms",
        "latency_ms",
        "run_id",
        "retrieval_run_id",
        "created_at",
        "evaluation_id",
        "experiment_url",
        "texts_embedded",
        "cache_hits",
    }
)


def content_version(frame: pd.DataFrame) -> dg.DataVersion:
    """The data version of a table by its content, without the columns of who ran it and when: a re-run
    that computes the same rows keeps its version, so what reads it stays up to date (lib/freshness.py),
    and a changed partition has its own version (Dagster's default for partitioned assets is not)."""
    stable = frame[[c for c in frame.columns if c not in VOLATILE_COLUMNS]]
    try:  # the table as Arrow writes it (a third of the CPU of JSON text), the library versions left out
        table = pa.Table.from_pandas(stable, preserve_index=False).replace_schema_metadata(None)
    except (pa.ArrowException, TypeError, ValueError):  # a cell Arrow cannot hold: its text instead
        text = stable.to_json(orient="split", index=False, date_format="iso", default_handler=str)
        return dg.DataVersion(hashlib.sha256(text.encode()).hexdigest()[:16])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return dg.DataVersion(hashlib.sha256(sink.getvalue()).hexdigest()[:16])
