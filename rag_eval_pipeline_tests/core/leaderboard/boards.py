"""A small board for the renderer tests, ranked by span IoU: a ranked row, a quick one without a judge
verdict (not comparable with the full one: listed, not ranked), and a removed one (profile ``old``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames, rank_board
from rag_eval_pipeline.core.metrics.names import HEADLINE_METRICS
from rag_eval_pipeline.core.settings.monitoring_settings import LeaderboardSettings

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SPAN_IOU = LeaderboardSettings(rank_by="span_iou", context_budget_tokens=None)


def ranked(answers: bool) -> pd.DataFrame:
    rows = []
    for config, profile, iou, mode, n in (
        ("fixed", "top2", 0.5, "full", 85),
        ("recursive", "top2", 0.4, "quick", 20),
        ("fixed", "old", 0.9, "full", 85),
    ):
        row: dict[str, object] = {
            "chunk_config": config,
            "profile": profile,
            "top_k": 2,
            "n_questions": n,
            "evaluation_mode": mode,
            "dataset_sha256": "d1",
            "metrics_created_at": NOW,
        }
        for metric in HEADLINE_METRICS:
            mean = iou if metric == "span_iou" else 0.5
            row |= {f"{metric}_mean": mean, f"{metric}_ci_low": mean - 0.1, f"{metric}_ci_high": mean + 0.1}
        if answers:
            row |= {"keyword_mean": 0.25, "semantic_dynamic_mean": 0.5, "hybrid_mean": 0.4}
            row |= {"llm_judge_mean": 0.75 if config == "fixed" else float("nan")}
        rows.append(row)
    configured = ConfiguredNames(frozenset({"fixed", "recursive"}), frozenset({"top2"}))
    return rank_board(pd.DataFrame(rows), configured, SPAN_IOU)
