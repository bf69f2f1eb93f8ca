"""Building the leaderboard from the partitions' metric tables: one row per evaluated partition with its
summarized retrieval metrics and provenance, the answer and judge columns where they exist, ranked; and
the headline metrics every view picks from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from rag_eval_pipeline.core.evaluation.costs import SETUP_COST_COLUMNS
from rag_eval_pipeline.core.leaderboard.board import (
    ANSWER_COLUMNS,
    ANSWER_MEANS,
    HEADLINE_METRICS,
    build_board,
    headline_subset,
)
from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames
from rag_eval_pipeline.core.metrics.aggregate import summarize
from rag_eval_pipeline.core.metrics.names import TOKEN_LEVEL_METRICS
from rag_eval_pipeline.core.metrics.reference_copies import RUN_DUPLICATION_COLUMNS
from rag_eval_pipeline.core.settings.monitoring_settings import LeaderboardSettings
from rag_eval_pipeline.core.store.table_upgrades import upgrade_retrieval_metrics

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
CONFIGURED = ConfiguredNames(frozenset({"fixed", "recursive"}), frozenset({"top2"}))
SPAN_IOU = LeaderboardSettings(rank_by="span_iou", context_budget_tokens=None)


def retrieval_metrics(
    chunk_config: str, iou: list[float], run: str, created_at: datetime = NOW, **evaluation: str
) -> pd.DataFrame:
    """A partition's per-question metrics; ``evaluation`` (evaluation_id, evaluation_mode) as the run
    wrote them: none for a table written before evaluations were tagged."""
    # as the warehouse reads it (core/store/table_upgrades.py): a table written before some columns, upgraded
    return upgrade_retrieval_metrics(
        pd.DataFrame(
            [
                {
                    "question_id": f"q{i}",
                    "chunk_config": chunk_config,
                    "profile": "top2",
                    "top_k": 2,
                    **{m: 0.5 for m in TOKEN_LEVEL_METRICS},
                    "span_iou": value,
                    "run_id": run,
                    "created_at": created_at,
                    "chunk_config_hash": "c",
                    "profile_hash": "p",
                    "embedder_model_id": "e",
                    "corpus_sha256": "corpus",
                    "dataset_sha256": "d1",
                    **evaluation,
                }
                for i, value in enumerate(iou)
            ]
        )
    )


def answer_metrics(chunk_config: str, keyword: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "chunk_config": chunk_config,
                "profile": "top2",
                "answerer": "extractive",
                "threshold": 0.7,
                "threshold_how": "fitted",
                **{m: 0.5 for m in ANSWER_MEANS},
                **{f"{m}_status": "ok" for m in ANSWER_MEANS},
                "keyword": value,
                "keyword_status": "ok" if i else "skipped",  # the first answer had no keywords to check
                "semantic_validation": ("pass", "fail", "n/a")[i % 3],
                "escalated": i == 0,
            }
            for i, value in enumerate(keyword)
        ]
    )


def test_a_row_per_evaluated_partition_ranked_with_its_summaries_and_provenance() -> None:
    board = build_board(
        {
            "fixed|top2": retrieval_metrics(
                "fixed",
                [0.2, 0.4, 0.6],
                "r1",
                NOW - timedelta(hours=1),
                evaluation_id="e1",
                evaluation_mode="quick",
            ),
            "recursive|top2": retrieval_metrics("recursive", [0.9, 0.7], "r2"),  # before evaluation tags
            "new|top2": pd.DataFrame(),  # a partition not evaluated yet
        },
        {},
        pd.DataFrame(),
        CONFIGURED,
        SPAN_IOU,
    )
    assert board is not None
    # the newer full run is the reference: the quick one is listed, not ranked with it
    assert list(board["chunk_config"]) == ["recursive", "fixed"]
    assert list(board["rank"].astype("object")) == [1, pd.NA] and list(board["n_questions"]) == [2, 3]
    assert list(board["note"]) == ["", "quick run on 3 questions vs full runs"]
    assert list(board["ranked_by"]) == ["span_iou", "span_iou"] and list(board["tier"].astype("object")) == [
        1,
        pd.NA,
    ]
    fixed = board.iloc[1]
    expected = summarize([0.2, 0.4, 0.6], "span_iou")
    assert (fixed["span_iou_mean"], fixed["span_iou_ci_low"], fixed["span_iou_ci_high"]) == pytest.approx(
        (expected.mean, expected.ci_low, expected.ci_high)
    )
    assert fixed["span_iou_std"] == pytest.approx(expected.std)
    assert fixed["span_iou_std_pop"] == pytest.approx(expected.std_population)
    # a table from before evaluations were tagged: its own run's evaluation, in full mode
    assert list(board["evaluation_mode"]) == ["full", "quick"]
    assert list(board["evaluation_id"]) == ["r2", "e1"]
    assert list(board["metrics_run_id"]) == ["r2", "r1"]
    # metrics written before stale questions, profile versions or LangSmith were recorded
    assert list(board["n_stale_questions"]) == [0, 0] and list(board["profile_version"]) == ["", ""]
    assert list(board["question_generators"]) == ["", ""]  # unknown: no note on the questions


def test_the_boards_columns_are_the_parquet_columns_readers_know() -> None:
    board = build_board({"fixed|top2": retrieval_metrics("fixed", [0.5], "r1")}, {}, pd.DataFrame(), None)
    assert board is not None
    assert list(board.columns) == [
        "rank",
        "chunk_config",
        "profile",
        "top_k",
        "n_questions",
        "question_set",
        "document_scope",
        "n_stale_questions",
        *RUN_DUPLICATION_COLUMNS,
        *(
            f"{m}_{part}"
            for m in TOKEN_LEVEL_METRICS
            for part in ("mean", "std", "std_pop", "ci_low", "ci_high")
        ),
        "metrics_run_id",
        "evaluation_mode",
        "evaluation_id",
        "metrics_created_at",
        "chunk_config_hash",
        "profile_hash",
        "profile_version",
        "retrievers",
        "embedder_model_id",
        "corpus_sha256",
        "dataset_sha256",
        "question_generators",
        "experiment_url",
        *SETUP_COST_COLUMNS,
        "cost_basis",
        "answer_threshold",
        "removed",
        "other_documents",
        "other_dataset",
        "other_mode",
        "other_question_set",
        "no_objective",
        "other_threshold",
        "excluded",
        "note",
        "ranked_by",
        "ranked_by_note",
        "rank_constraint",
        "tier",
        "tier_p_value",
        "tier_test",
        "tier_alpha",
        "power_detectable_difference",
        "power_difference_sd",
        "power_questions_needed",
        "power_comparisons",
        "pareto_front",
    ]


def test_answer_and_judge_columns_join_their_pair() -> None:
    judgements = pd.DataFrame(
        [
            {"chunk_config": "fixed", "profile": "top2", "status": status, "score": score, "correct": correct}
            for status, score, correct in (("ok", 0.8, True), ("ok", 0.6, False), ("failed", None, False))
        ]
        + [{"chunk_config": "gone", "profile": "top2", "status": "ok", "score": 1.0, "correct": True}]
    )
    board = build_board(
        {
            "fixed|top2": retrieval_metrics("fixed", [0.5], "r1"),
            "recursive|top2": retrieval_metrics("recursive", [0.4], "r2"),
        },
        {"fixed|top2": answer_metrics("fixed", [0.0, 0.25, 0.75])},
        judgements,
        CONFIGURED,
    )
    assert board is not None
    assert set(ANSWER_COLUMNS) <= set(board.columns)
    fixed, recursive = board.iloc[0], board.iloc[1]
    assert fixed["keyword_mean"] == pytest.approx(0.5)  # over the two answers where keyword applied
    assert fixed["grounded_rate"] == pytest.approx(0.5) and fixed["escalated_fraction"] == pytest.approx(
        1 / 3
    )
    assert (fixed["answer_threshold"], fixed["answer_threshold_how"]) == (0.7, "fitted")
    assert (fixed["llm_judge_n"], fixed["llm_judge_failed"]) == (2, 1)
    assert (fixed["llm_judge_mean"], fixed["llm_judge_accuracy"]) == pytest.approx((0.7, 0.5))
    assert recursive[list(ANSWER_COLUMNS)].isna().all()  # no answers: every answer column empty


def test_no_evaluated_partition_gives_no_board() -> None:
    assert build_board({"fixed|top2": pd.DataFrame()}, {}, pd.DataFrame(), CONFIGURED) is None


def test_a_view_picks_only_headline_metrics_in_its_own_order() -> None:
    assert headline_subset(HEADLINE_METRICS, "mrr", "span_iou") == ("mrr", "span_iou")
    with pytest.raises(ValueError, match="not headline metrics: hit_at_k"):
        headline_subset(HEADLINE_METRICS, "span_iou", "hit_at_k")


def test_the_duplication_counts_sum_the_questions_and_are_unknown_for_older_tables() -> None:
    counted = retrieval_metrics("fixed", [0.2, 0.4, 0.6], "r1").assign(
        duplicated_references=[0, 2, 1], extra_reference_copies=[0, 3, 1]
    )
    board = build_board({"fixed|top2": counted}, {}, pd.DataFrame(), CONFIGURED)
    assert board is not None
    assert board.iloc[0][list(RUN_DUPLICATION_COLUMNS)].tolist() == [2, 3, 4]
    # a table written before the counts (and the copy-aware metrics) existed: unknown, not 0; no error
    old = retrieval_metrics("recursive", [0.9], "r2").drop(
        columns=["span_recall_copies", "span_precision_copies", "span_iou_copies"]
    )
    board = build_board({"fixed|top2": counted, "recursive|top2": old}, {}, pd.DataFrame(), CONFIGURED)
    assert board is not None
    row = board.set_index("chunk_config").loc["recursive"]
    assert all(pd.isna(row[c]) for c in RUN_DUPLICATION_COLUMNS)
    assert pd.isna(row["span_iou_copies_mean"]) and row["span_iou_mean"] == 0.9
    assert str(board["duplicated_references"].dtype) == "Int64"


def test_questions_with_traffic_counts_add_weighted_means_and_counts_of_1_add_nothing() -> None:
    weighted = retrieval_metrics("fixed", [1.0, 0.0, 0.5], "r1").assign(query_count=[8, 1, 1])
    board = build_board({"fixed|top2": weighted}, {}, pd.DataFrame(), CONFIGURED, SPAN_IOU)
    assert board is not None
    row = board.iloc[0]
    # by hand: (8 * 1.0 + 1 * 0.0 + 1 * 0.5) / 10 = 0.85, beside the plain mean 0.5
    assert row["span_iou_mean"] == pytest.approx(0.5) and row["span_iou_weighted_mean"] == pytest.approx(0.85)
    assert row["span_recall_1000t_weighted_mean"] == pytest.approx(0.5)
    ones = retrieval_metrics("fixed", [1.0, 0.0, 0.5], "r1").assign(query_count=[1, 1, 1])
    for frame in (ones, retrieval_metrics("fixed", [1.0, 0.0, 0.5], "r1")):
        plain = build_board({"fixed|top2": frame}, {}, pd.DataFrame(), CONFIGURED, SPAN_IOU)
        assert plain is not None and not [c for c in plain.columns if c.endswith("_weighted_mean")]
