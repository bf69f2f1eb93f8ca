"""The warehouse's and the history's tables: the leaderboard, the questions and their counts, a metric's
history, baselines and the comparison of two evaluations, as their commands read them."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..core.project.project_files import ProjectFiles
from ..core.tables import json_records
from .calls import (
    ApiError,
    Call,
)


def leaderboard(call: Call) -> Any:
    from ..core.store.warehouse import LEADERBOARD, Warehouse

    board = Warehouse.in_project(call.files.root).read_current(LEADERBOARD)
    if board is None:
        raise ApiError(404, "no leaderboard yet: run `rag-eval run` first")
    return {"items": json_records(board), "total": len(board)}


def catalog_of(files: ProjectFiles) -> Any:
    from ..core.questions.question_catalog import catalog
    from ..core.store.warehouse import Warehouse

    table = Warehouse.in_project(files.root).read_current("eval_questions")
    return None if table is None else catalog(table)


NO_QUESTIONS = "no evaluation questions yet: `rag-eval run` (or `rag-eval regenerate-questions`) makes them"


def list_questions(call: Call) -> Any:
    from ..core.questions.question_catalog import check_question_filters, filter_questions

    limit, offset = call.paging(100)
    questions = catalog_of(call.files)
    if questions is None:
        raise ApiError(404, NO_QUESTIONS)
    types, documents = call.many("type"), call.many("document")
    check_question_filters(questions, types, documents)
    matching = filter_questions(questions, types, documents)
    page = matching[offset : offset + limit]
    return {"items": [q.record() for q in page], "total": len(matching), "limit": limit, "offset": offset}


def question_stats(call: Call) -> Any:
    from ..core.questions.question_catalog import question_stats as stats_of

    questions = catalog_of(call.files)
    if questions is None:
        raise ApiError(404, NO_QUESTIONS)
    stats = stats_of(questions)
    return {
        "total": stats.total,
        "stale": stats.stale,
        "multi_document": stats.multi_document,
        "by_type": dict(stats.by_type),
        "by_document": dict(stats.by_document),
        "rows": stats.records(),
    }


def metric_history(call: Call) -> Any:
    """``rag-eval history METRIC [--partition C|P] [--table T]``."""
    from ..core.store.history import HistoryStore, PartitionKey

    metric = call.name("metric")
    partition_text = call.one("partition")
    partition = PartitionKey.parse(partition_text) if partition_text else None
    with HistoryStore(_warehouse_dir(call.files)) as history:
        table = call.one("table") or history.summary_table_for(metric)
        trend = history.trend(metric, table, partition)
    return {"metric": metric, "table": table, "items": json_records(trend), "total": len(trend)}


def _warehouse_dir(files: ProjectFiles) -> Path:
    from ..core.store.warehouse import Warehouse

    return Warehouse.in_project(files.root).base_dir


def list_baselines(call: Call) -> Any:
    from ..core.evaluation.baselines import BaselineStore

    store = BaselineStore(_warehouse_dir(call.files))
    pinned = [{**asdict(b), "partition": str(b.partition)} for b in store.pinned()]
    return {"items": pinned, "total": len(pinned)}


def pin_baseline(call: Call) -> Any:
    """``rag-eval baseline set REF [--partition C|P]``."""
    from ..core.evaluation.baselines import BaselineStore
    from ..core.store.history import HistoryStore, PartitionKey

    body = call.fields({"ref": str, "partition": str}, required=["ref"])
    partition = PartitionKey.parse(body["partition"]) if body.get("partition") else None
    store = BaselineStore(_warehouse_dir(call.files))
    with HistoryStore(_warehouse_dir(call.files)) as history:
        runs, changes = store.pin_ref(history, body["ref"], partition)
    changed = {c.partition: c for c in changes}
    return {
        "items": [
            {
                "partition": str(r.partition),
                "run_id": r.run_id,
                "evaluation_id": r.evaluation_id,
                "mode": r.mode,
                "changed": r.partition in changed,
                "replaced_run_id": changed[r.partition].replaced_run_id if r.partition in changed else None,
            }
            for r in runs
        ]
    }


def compare_runs(call: Call) -> Any:
    """``rag-eval compare A B [--metrics m,n] [--table T]``, with the regression settings' confidence."""

    from ..core.evaluation.comparison import compare
    from ..core.settings.monitoring_settings import MonitoringSettings
    from ..core.store.history import HistoryStore

    a, b = call.one("a"), call.one("b")
    if not a or not b:
        raise ApiError(400, "give the two evaluations (or runs) to compare: ?a=ID&b=ID")
    table = call.one("table", "retrieval_metrics") or "retrieval_metrics"
    if table not in ("retrieval_metrics", "answer_metrics"):
        raise ApiError(400, f"table {table[:40]!r}: choose retrieval_metrics or answer_metrics")
    settings = call.files.load_settings(MonitoringSettings).regression
    metrics = tuple(call.many("metrics")) or (
        settings.answer_metrics if table == "answer_metrics" else settings.metrics
    )
    with HistoryStore(_warehouse_dir(call.files)) as history:
        comparison = compare(
            history,
            a,
            b,
            metrics,
            table=table,
            confidence=settings.confidence,
            n_resamples=settings.n_resamples,
            seed=settings.seed,
        )

    def number(value: float) -> float | None:
        return None if math.isnan(value) else value

    return {
        "a": comparison.a.describe(),
        "b": comparison.b.describe(),
        "table": comparison.table,
        "items": [
            {
                "partition": run.label,
                "metric": d.metric,
                "n_paired": d.n_paired,
                "mean_a": number(d.mean_a),
                "mean_b": number(d.mean_b),
                "delta": number(d.delta),
                "ci_low": number(d.ci_low),
                "ci_high": number(d.ci_high),
                "confidence": d.confidence,
                "verdict": d.verdict,
                "difference": run.difference,
            }
            for run in comparison.runs
            for d in run.result.deltas
        ],
        "only_a": [str(p) for p in comparison.only_a],
        "only_b": [str(p) for p in comparison.only_b],
    }
