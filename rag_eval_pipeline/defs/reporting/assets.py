"""The leaderboard over every evaluated partition, and the HTML report beside it."""

from pathlib import Path

import dagster as dg
import pandas as pd

from ...core.answers.board import leaderboard_answer_columns
from ...core.evaluation import TOKEN_LEVEL_METRICS
from ...core.leaderboard import (
    first_ranked,
    footnotes,
    is_not_comparable,
    is_removed,
    pairs_where,
    rank_board,
)
from ...core.metrics.aggregate import summarize_table
from ...core.report import write_report
from ...core.tables import records
from ...lib.io_managers import WarehouseResource
from ...lib.leaderboard_tables import HEADLINE_ANSWER_METRICS, HEADLINE_METRICS, leaderboard_markdown
from ...lib.metric_columns import summary_columns
from ...lib.provenance import now_utc, with_columns
from ...lib.resources import ProjectResource
from ...lib.step_inputs import configured_names
from ...lib.step_redaction import redacts_secrets


@dg.asset(
    group_name="reporting",
    ins={
        "retrieval_metrics": dg.AssetIn(metadata={"allow_missing_partitions": True}),
        "answer_metrics": dg.AssetIn(metadata={"allow_missing_partitions": True}),
    },
    kinds={"python", "parquet"},
)
@redacts_secrets
def leaderboard(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    warehouse: WarehouseResource,
    retrieval_metrics: dict[str, pd.DataFrame],
    answer_metrics: dict[str, pd.DataFrame],
    answer_judgements: pd.DataFrame,
) -> dg.Output[pd.DataFrame]:
    """The latest metrics of every evaluated partition, best span IoU first, with bootstrap 95% CIs;
    the answer columns (keyword, semantic, hybrid, production metrics, and the LLM judge for the pairs
    it judged) where answers were evaluated. Also an HTML report (table, recall vs precision scatter,
    trends from history/retrieval_metrics_summary): reports/leaderboard.html and reports/history/<run>.html.
    Partitions of a removed chunk config or profile are listed, not ranked; rows on other questions or
    with another answer threshold than most are marked (core/leaderboard.py says the rule)."""
    answer_columns = leaderboard_answer_columns(answer_metrics, answer_judgements)
    rows = []
    for _, frame in sorted(retrieval_metrics.items()):
        if frame.empty:
            continue
        first = frame.iloc[0]
        summaries = summarize_table(records(frame[list(TOKEN_LEVEL_METRICS)]), TOKEN_LEVEL_METRICS)
        rows.append(
            {
                "chunk_config": first["chunk_config"],
                "profile": first["profile"],
                "top_k": int(first["top_k"]),
                "n_questions": len(frame),
                # metrics written before stale questions were counted had none
                "n_stale_questions": int(first.get("n_stale_questions", 0)),
                **summary_columns(summaries),
                "metrics_run_id": first["run_id"],
                # a quick run replaces its partition's current metrics: the board says so
                "evaluation_mode": first.get("evaluation_mode", "full"),
                "evaluation_id": first.get("evaluation_id", first["run_id"]),
                "metrics_created_at": first["created_at"],
                "chunk_config_hash": first["chunk_config_hash"],
                "profile_hash": first["profile_hash"],
                "profile_version": first.get("profile_version", ""),
                "retrievers": first.get("retrievers", ""),
                "embedder_model_id": first["embedder_model_id"],
                "corpus_sha256": first["corpus_sha256"],
                "dataset_sha256": first["dataset_sha256"],
                "experiment_url": first.get("experiment_url", ""),
                **answer_columns.get((str(first["chunk_config"]), str(first["profile"])), {}),
            }
        )
    if not rows:
        raise dg.Failure(
            "no retrieval_metrics partition has been materialized yet: evaluate a partition first"
        )
    board = rank_board(pd.DataFrame(rows), configured_names(project, context.log))
    board = with_columns(board, run_id=context.run.run_id, created_at=now_utc())
    for line in footnotes(board):
        context.log.info(f"leaderboard: {line}")
    best = first_ranked(board)
    report = write_report(
        board,
        Path(warehouse.base_dir) / "history" / "retrieval_metrics_summary",
        Path(warehouse.base_dir) / "reports",
        context.run.run_id,
        headline_metrics=HEADLINE_METRICS,
        answer_metrics=HEADLINE_ANSWER_METRICS,
    )
    for problem in report.problems:
        context.log.warning(problem)
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_partitions": len(board),
        "n_ranked": int(board["rank"].notna().sum()),
        "best": f"{best['chunk_config']} x {best['profile']}" if best is not None else "none ranked",
    }
    if best is not None:
        metadata["best_span_iou"] = float(best["span_iou_mean"])
    return dg.Output(
        board,
        metadata={
            **metadata,
            # what the board cannot vouch for: no longer configured, or not comparable with the rest
            "removed": ", ".join(pairs_where(board, is_removed))
            or ("unknown: the config files could not be read" if board["removed"].isna().all() else "none"),
            "not_comparable": ", ".join(pairs_where(board, is_not_comparable)) or "none",
            "leaderboard": dg.MetadataValue.md(leaderboard_markdown(board)),
            # this materialization's report (kept); reports/leaderboard.html is always the latest
            "report": dg.MetadataValue.url(report.snapshot.resolve().as_uri()),
            "report_path": dg.MetadataValue.path(str(report.snapshot.resolve())),
            "report_latest_path": dg.MetadataValue.path(str(report.current.resolve())),
        },
    )
