"""`rag-eval query | compare | baseline | history`: the evaluation history from a terminal.

``query`` runs DuckDB SQL over every history table; ``compare A B`` tells per partition and metric whether
B is better than A (paired bootstrap over shared questions); ``baseline set|list`` pins what the
regression checks compare with; ``history METRIC`` shows a metric's trend per partition.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from ..core.evaluation.baselines import BaselineStore
from ..core.evaluation.comparison import Comparison, compare
from ..core.settings.monitoring_settings import MonitoringSettings, RegressionSettings
from ..core.settings.settings_file import load_settings
from ..core.store.history import HistoryError, HistoryStore, PartitionKey
from ..core.text_table import format_number, format_table
from .output import add_format_argument, cell, render
from .registry import COMMANDS, CommandContext, add_command

HISTORY_COMMANDS = tuple(name for name, info in COMMANDS.items() if info.module == "history")
COMPARE_TABLES = ("retrieval_metrics", "answer_metrics")


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    query = add_command(commands, "query")
    query.add_argument(
        "sql", help='e.g. "select chunk_config, profile, avg(span_iou) from retrieval_metrics group by all"'
    )
    add_format_argument(query)

    compared = add_command(commands, "compare")
    compared.add_argument("a", help="evaluation id, run id, or a unique prefix of either")
    compared.add_argument("b", help="evaluation id, run id, or a unique prefix of either")
    compared.add_argument(
        "--metrics", help="comma-separated metrics (default: regression.metrics / answer_metrics)"
    )
    compared.add_argument("--table", choices=COMPARE_TABLES, default="retrieval_metrics")

    baseline = add_command(commands, "baseline")
    actions = baseline.add_subparsers(dest="action", required=True)
    pinned = actions.add_parser("set", help="pin an evaluation's (or run's) partitions as baselines")
    pinned.add_argument("ref", help="evaluation id, run id, or a unique prefix of either")
    pinned.add_argument("--partition", help="only this partition, written CHUNK_CONFIG|PROFILE")
    listed = actions.add_parser(
        "list", help="the pinned baselines (partitions without one use the previous full run)"
    )
    listed.add_argument("--changes", action="store_true", help="every change ever made, oldest first")

    trend = add_command(commands, "history")
    trend.add_argument("metric", help="e.g. span_iou, mrr, keyword")
    trend.add_argument("--partition", help="only this partition, written CHUNK_CONFIG|PROFILE")
    trend.add_argument("--table", help="summary table (default: the one holding the metric, retrieval first)")


def run_history_command(
    args: argparse.Namespace, warehouse_dir: str | Path, monitoring_file: str | Path | None = None
) -> int:
    """Exit code 0, or 2 with a message on stderr for an unknown run, metric, table, bad SQL or a bad
    settings file. ``compare`` takes its confidence, resamples and seed from ``regression`` in
    ``monitoring_file`` (data/monitoring.yaml; defaults without it)."""
    settings = (
        load_settings(monitoring_file, MonitoringSettings).regression
        if monitoring_file
        else RegressionSettings()
    )
    with HistoryStore(warehouse_dir) as history:
        if args.command == "query":
            print(render(history.query(args.sql), args.format))
        elif args.command == "compare":
            metrics = _metrics(args.metrics, args.table, settings)
            comparison = compare(
                history,
                args.a,
                args.b,
                metrics,
                table=args.table,
                confidence=settings.confidence,
                n_resamples=settings.n_resamples,
                seed=settings.seed,
            )
            print(format_comparison(comparison))
        elif args.command == "baseline":
            print(_baseline(args, history, BaselineStore(warehouse_dir)))
        elif args.command == "history":
            partition = PartitionKey.parse(args.partition) if args.partition else None
            table = args.table or history.summary_table_for(args.metric)
            print(format_trend(history.trend(args.metric, table, partition), args.metric, table))
        else:
            raise HistoryError(
                f"unknown history command {args.command!r}; known: {', '.join(HISTORY_COMMANDS)}"
            )
    return 0


def _metrics(option: str | None, table: str, settings: RegressionSettings) -> tuple[str, ...]:
    if option:
        return tuple(m.strip() for m in option.split(",") if m.strip())
    return settings.answer_metrics if table == "answer_metrics" else settings.metrics


def _baseline(args: argparse.Namespace, history: HistoryStore, store: BaselineStore) -> str:
    if args.action == "list":
        if args.changes:
            changes = store.changes()
            if not changes:
                return "no baseline was ever pinned"
            return render(
                pd.DataFrame(
                    [
                        {
                            "at": c.at,
                            "partition": str(c.partition),
                            "run_id": c.run_id,
                            "evaluation_id": c.evaluation_id,
                            "replaced_run_id": c.replaced_run_id or "",
                        }
                        for c in changes
                    ]
                ),
                "table",
            )
        pinned = store.pinned()
        if not pinned:
            return "no pinned baseline: each partition is compared with its previous full run on the same dataset"
        return render(
            pd.DataFrame(
                [
                    {
                        "partition": str(b.partition),
                        "evaluation_id": b.evaluation_id,
                        "run_id": b.run_id,
                        "mode": b.mode,
                        "dataset_sha256": b.dataset_sha256,
                        "pinned_at": b.pinned_at,
                    }
                    for b in pinned
                ]
            ),
            "table",
        )
    partition = PartitionKey.parse(args.partition) if args.partition else None
    runs, changes = store.pin_ref(history, args.ref, partition)
    lines = []
    by_partition = {c.partition: c for c in changes}
    for run in runs:
        change = by_partition.get(run.partition)
        if change is None:
            lines.append(f"{run.partition}: already pinned to run {run.run_id}")
            continue
        replaced = f", replacing run {change.replaced_run_id}" if change.replaced_run_id else ""
        lines.append(
            f"{run.partition}: baseline is run {run.run_id} (evaluation {run.evaluation_id}, {run.mode}){replaced}"
        )
        if run.mode == "quick":
            lines.append(
                "  note: a quick-mode baseline holds a sample; later runs are compared on the questions it has"
            )
    lines.append(f"baselines: {store.path}")
    return "\n".join(lines)


def format_comparison(comparison: Comparison) -> str:
    """One line per partition and metric: A, B, delta, the interval and the verdict."""
    confidence = f"{comparison.runs[0].result.deltas[0].confidence:.0%} CI" if comparison.runs else "CI"
    rows = [["partition", "metric", "n", "A", "B", "delta", confidence, "verdict"]]
    for run in comparison.runs:
        for d in run.result.deltas:
            ci = "n/a" if math.isnan(d.ci_low) else f"[{d.ci_low:+.4f}, {d.ci_high:+.4f}]"
            rows.append(
                [
                    run.label,
                    d.metric,
                    str(d.n_paired),
                    format_number(d.mean_a),
                    format_number(d.mean_b),
                    format_number(d.delta, "+"),
                    ci,
                    d.verdict,
                ]
            )
    lines = [
        f"A: {comparison.a.describe()}",
        f"B: {comparison.b.describe()}",
        f"table: {comparison.table}",
        "",
    ]
    lines.append(format_table(rows[0], rows[1:]))
    for run in comparison.runs:
        r = run.result
        if run.difference:  # the leaderboard would not rank the two together either
            lines.append(
                f"{run.label}: B was not measured like A ({run.difference}): its deltas pair only the "
                f"{r.n_shared} questions both runs answered, and the leaderboard would not rank the two together"
            )
        if r.n_shared < max(r.n_a, r.n_b):
            lines.append(
                f"{run.label}: {r.n_shared} questions in both runs (A has {r.n_a}, B has {r.n_b}); only those are compared"
            )
    if comparison.only_a:
        lines.append(f"not compared, only in A: {', '.join(map(str, comparison.only_a))}")
    if comparison.only_b:
        lines.append(f"not compared, only in B: {', '.join(map(str, comparison.only_b))}")
    return "\n".join(lines)


def format_trend(frame: pd.DataFrame, metric: str, table: str) -> str:
    """One row per run; a run measured otherwise than the partition's run before it (core/evaluation/comparability.py)
    starts a new line, and its note says what changed."""
    rows = [["partition", "created_at", "evaluation_id", "run_id", "mode", "n", metric, "CI", "note"]]
    for r in frame.to_dict("records"):
        ci = (
            "n/a"
            if pd.isna(r["ci_low"]) or pd.isna(r["ci_high"])
            else f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
        )
        rows.append(
            [
                f"{r['chunk_config']}|{r['profile']}",
                cell(r["created_at"]),
                str(r["evaluation_id"]),
                str(r["run_id"]),
                str(r["evaluation_mode"]),
                cell(r["n"]),
                format_number(float(r["mean"])) if not pd.isna(r["mean"]) else "n/a",
                ci,
                f"new line: {r['break']}" if r.get("break") else "",
            ]
        )
    lines = [f"{metric} from {table}", format_table(rows[0], rows[1:])]
    if frame.get("break", pd.Series(dtype="object")).astype(bool).any():
        lines.append(
            "new line: this run was measured otherwise than the partition's run before it (other documents, "
            "questions, mode or question sample), so its mean does not continue the trend before it"
        )
    return "\n".join(lines)


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    files = context.files
    return run_history_command(args, context.warehouse.base_dir, files.path(files.monitoring_file))
