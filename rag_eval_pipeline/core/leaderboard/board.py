"""The leaderboard's rows, built from the partitions' metric tables, and what each view shows of the
headline metrics (core/metrics/names.py: ``HEADLINE_METRICS``, ``HEADLINE_ANSWER_METRICS``).

A row is one chunk config x profile: the latest retrieval metrics (mean, std and bootstrap 95% CI per
metric, with the run's provenance); where answers were evaluated, the answer metrics' means; for the
pairs the judge saw, its verdict. ``build_board`` ranks the rows by the objective (``ranking.py``), with
statistical tiers from the per-question metrics (``tiers.py``). The tables are in the current shape
(core/store/table_upgrades.py upgrades older ones where the warehouse reads them).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..answers.tables import ok_mean
from ..evaluation.comparability import question_set
from ..evaluation.costs import COST_BASIS, CostAssumptions, setup_costs
from ..llm.accounting import PriceTable
from ..metrics.aggregate import summarize, summarize_table, summary_columns
from ..metrics.names import (
    AGGREGATED_CONFIDENCE,
    CONTEXT_PRECISION,
    CONTEXT_RECALL_HEURISTIC,
    CONTEXT_RELEVANCE,
    CORRECTNESS_METRICS,
    HEADLINE_ANSWER_METRICS,
    HEADLINE_METRICS,
    KEYWORD,
    LLM_JUDGE,
    MRR,
    QUERY_COUNT,
    RECALL_AT_K,
    SEMANTIC_DYNAMIC,
    SPAN_IOU,
    SPAN_PRECISION,
    SPAN_RECALL,
    TOKEN_LEVEL_METRICS,
    weighted_mean_column,
)
from ..metrics.reference_copies import DUPLICATION_COLUMNS, RUN_DUPLICATION_COLUMNS, ReferenceDuplication
from ..metrics.traffic import is_weighted, weighted_mean_columns, weighted_means
from ..settings.monitoring_settings import LeaderboardSettings
from ..tables import records
from .pareto import mark_front
from .ranking import ConfiguredNames, Pair, rank_board


def headline_subset(headline: tuple[str, ...], *names: str) -> tuple[str, ...]:
    """``names``, in the view's order, each one of ``headline``: a view picks from the headline metrics,
    it never adds its own."""
    unknown = [name for name in names if name not in headline]
    if unknown:
        raise ValueError(f"not headline metrics: {', '.join(unknown)}")
    return names


# What each view shows: the asset's markdown and the HTML table every headline metric, the narrower
# views a named subset. The terminal table (17 characters per mean and CI): no nDCG@k, no hybrid.
TERMINAL_METRICS = headline_subset(HEADLINE_METRICS, SPAN_RECALL, SPAN_PRECISION, SPAN_IOU, RECALL_AT_K, MRR)
TERMINAL_ANSWER_METRICS = headline_subset(HEADLINE_ANSWER_METRICS, KEYWORD, SEMANTIC_DYNAMIC, LLM_JUDGE)
# `rag-eval status`, beside each evaluated partition's mode and question count.
STATUS_METRICS = headline_subset(HEADLINE_METRICS, SPAN_RECALL, SPAN_IOU, RECALL_AT_K, MRR)
# The report's trend panels over runs, the ranking metric first.
TREND_METRICS = headline_subset(HEADLINE_METRICS, SPAN_IOU, SPAN_RECALL, MRR)

# The answer columns of a row. Means over the rows where each metric is ok (NaN when it never applied).
ANSWER_MEANS = (
    *CORRECTNESS_METRICS,
    CONTEXT_RELEVANCE,
    CONTEXT_PRECISION,
    CONTEXT_RECALL_HEURISTIC,
    AGGREGATED_CONFIDENCE,
)
JUDGE_COLUMNS = ("llm_judge_mean", "llm_judge_accuracy", "llm_judge_n", "llm_judge_failed")
ANSWER_COLUMNS = (
    "answerer",
    *(f"{m}_mean" for m in ANSWER_MEANS),
    "grounded_rate",
    "escalated_fraction",
    *JUDGE_COLUMNS,
    # the semantic_dynamic threshold the rows were judged with: the ranking marks a pair whose threshold
    # differs from the others' (ranking.py)
    "answer_threshold",
    "answer_threshold_how",
)


def build_board(
    retrieval_metrics: Mapping[str, pd.DataFrame],
    answer_metrics: Mapping[str, pd.DataFrame],
    judgements: pd.DataFrame,
    configured: ConfiguredNames | None,
    objective: LeaderboardSettings | None = None,
    prices: PriceTable | None = None,
) -> pd.DataFrame | None:
    """The ranked board over every partition with retrieval metrics (partition keys -> the per-question
    metric table; an empty table is a partition not evaluated yet); None when no partition has any.
    ``configured`` None: the config files could not be read; ``objective`` None: the default one
    (``rank_board``); ``prices`` None: the list prices (core/llm/accounting.py). Each row carries its
    costs (core/evaluation/costs.py) and whether it is on the Pareto front of the objective against its context
    (pareto.py)."""
    objective = objective or LeaderboardSettings()
    assumptions = CostAssumptions(objective.generator_model, objective.answer_tokens, prices or PriceTable())
    answers = answer_columns(answer_metrics, judgements)
    evaluated = [frame for _, frame in sorted(retrieval_metrics.items()) if not frame.empty]
    rows = [
        {**retrieval_columns(frame), **setup_costs(frame, assumptions), **answers.get(pair_of(frame), {})}
        for frame in evaluated
    ]
    if not rows:
        return None
    board = pd.DataFrame(rows)
    board[COST_BASIS] = assumptions.basis()
    for column in RUN_DUPLICATION_COLUMNS:  # counts, unknown (<NA>) for tables written before them
        board[column] = board[column].astype("Int64")
    ranked = rank_board(board, configured, objective, {pair_of(frame): frame for frame in evaluated})
    return mark_front(ranked)


def pair_of(frame: pd.DataFrame) -> Pair:
    first = frame.iloc[0]
    return str(first["chunk_config"]), str(first["profile"])


def retrieval_columns(frame: pd.DataFrame) -> dict[str, object]:
    """A partition's row: its metrics summarized over the questions, and the run's provenance. ``frame``
    is in the current shape (core/store/table_upgrades.py: the warehouse reads it so); a metric added after
    the table was written (the copy-aware spans) is NaN there, with n = 0."""
    first = frame.iloc[0]
    present = [m for m in TOKEN_LEVEL_METRICS if m in frame.columns]
    found = summarize_table(records(frame[present]), present)
    summaries = {m: found[m] if m in found else summarize([], m) for m in TOKEN_LEVEL_METRICS}
    return {
        "chunk_config": first["chunk_config"],
        "profile": first["profile"],
        "top_k": int(first["top_k"]),
        "n_questions": len(frame),
        "question_set": question_set(frame),
        # "" for a chunk set over the whole corpus
        "document_scope": str(first["document_scope"] or ""),
        "n_stale_questions": int(first["n_stale_questions"]),
        **duplication_columns(frame),
        **summary_columns(summaries),
        **traffic_columns(frame, present),
        "metrics_run_id": first["run_id"],
        # a quick run replaces its partition's current metrics: the board says so
        "evaluation_mode": first["evaluation_mode"],
        "evaluation_id": first["evaluation_id"],
        "metrics_created_at": first["created_at"],
        "chunk_config_hash": first["chunk_config_hash"],
        "profile_hash": first["profile_hash"],
        "profile_version": first["profile_version"],
        "retrievers": first["retrievers"],
        "embedder_model_id": first["embedder_model_id"],
        "corpus_sha256": first["corpus_sha256"],
        "dataset_sha256": first["dataset_sha256"],
        # "" (unknown) for metrics written before the column existed: no note on the questions (view.py)
        "question_generators": first["question_generators"],
        "experiment_url": first["experiment_url"],
    }


def traffic_columns(frame: pd.DataFrame, metrics: list[str]) -> dict[str, float]:
    """``<metric>_weighted_mean`` per metric when the questions carry traffic counts (``query_count``)
    and some count differs from 1; nothing otherwise, so an unweighted board has no such column."""
    if QUERY_COUNT not in frame.columns:
        return {}
    counts = [float(c) for c in frame[QUERY_COUNT].fillna(1.0)]
    if not is_weighted(counts):
        return {}
    return weighted_mean_columns(weighted_means(records(frame[metrics]), metrics, counts))


def weighted_column(board: pd.DataFrame, metric: str) -> str | None:
    """The board's traffic-weighted mean of ``metric`` when some row has one (its questions carry
    counts), else None: a view shows it beside the plain mean only then."""
    column = weighted_mean_column(metric)
    return column if column in board.columns and bool(board[column].notna().any()) else None


def duplication_columns(frame: pd.DataFrame) -> dict[str, object]:
    """The partition's ``RUN_DUPLICATION_COLUMNS`` from its per-question counts; ``<NA>`` for a table
    written before they existed, whose counts read as ``<NA>`` (unknown, so no footnote: view.py)."""
    if frame[list(DUPLICATION_COLUMNS)].isna().all().all():
        return dict.fromkeys(RUN_DUPLICATION_COLUMNS, pd.NA)
    counts = ReferenceDuplication.of_questions(*(frame[c].fillna(0) for c in DUPLICATION_COLUMNS))
    return dict(counts.run_columns())


def answer_columns(
    metrics: Mapping[str, pd.DataFrame], judgements: pd.DataFrame
) -> dict[Pair, dict[str, object]]:
    """Per evaluated pair, the ``ANSWER_COLUMNS`` of its latest answer metrics and of the judgements."""
    columns: dict[Pair, dict[str, object]] = {}
    for frame in metrics.values():
        if frame.empty:
            continue
        first = frame.iloc[0]
        row: dict[str, object] = {name: float("nan") for name in ANSWER_COLUMNS}
        row["answerer"] = str(first["answerer"])
        if not pd.isna(first["threshold"]):  # NaN: judged before the threshold was recorded
            row["answer_threshold"] = float(first["threshold"])
            row["answer_threshold_how"] = str(first["threshold_how"])
        for metric in ANSWER_MEANS:
            row[f"{metric}_mean"] = ok_mean(frame, metric)
        validated = frame["semantic_validation"].isin(["pass", "fail"])
        if validated.any():
            row["grounded_rate"] = float((frame.loc[validated, "semantic_validation"] == "pass").mean())
        row["escalated_fraction"] = float(frame["escalated"].astype(bool).mean())
        row["llm_judge_n"] = 0
        row["llm_judge_failed"] = 0
        columns[pair_of(frame)] = row
    if not judgements.empty:
        for (chunk_config, profile), judged in judgements.groupby(["chunk_config", "profile"], sort=True):
            judged_row = columns.get((str(chunk_config), str(profile)))
            if judged_row is None:
                continue
            ok = judged["status"] == "ok"
            judged_row["llm_judge_n"] = int(ok.sum())
            judged_row["llm_judge_failed"] = int((judged["status"] == "failed").sum())
            if ok.any():
                judged_row["llm_judge_mean"] = float(judged.loc[ok, "score"].astype("float64").mean())
                judged_row["llm_judge_accuracy"] = float(judged.loc[ok, "correct"].astype(bool).mean())
    return columns
