"""The answer columns of the leaderboard: per chunk config x profile, the latest answer metrics and,
for the pairs the judge saw, the judge's verdict."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .tables import ok_mean

# Means over the rows where each metric is ok (NaN when it never applied).
ANSWER_MEANS = (
    "keyword",
    "semantic_similarity",
    "semantic_fixed",
    "semantic_dynamic",
    "hybrid",
    "context_relevance",
    "context_precision",
    "context_recall_heuristic",
    "aggregated_confidence",
)
JUDGE_COLUMNS = ("llm_judge_mean", "llm_judge_accuracy", "llm_judge_n", "llm_judge_failed")
ANSWER_COLUMNS = (
    "answerer",
    *(f"{m}_mean" for m in ANSWER_MEANS),
    "grounded_rate",
    "escalated_fraction",
    *JUDGE_COLUMNS,
    # the semantic_dynamic threshold the rows were judged with: the leaderboard marks a pair whose
    # threshold differs from the others' (core/leaderboard.py)
    "answer_threshold",
    "answer_threshold_how",
)

Pair = tuple[str, str]


def leaderboard_answer_columns(
    metrics: Mapping[str, pd.DataFrame], judgements: pd.DataFrame
) -> dict[Pair, dict[str, object]]:
    columns: dict[Pair, dict[str, object]] = {}
    for frame in metrics.values():
        if frame.empty:
            continue
        first = frame.iloc[0]
        pair = (str(first["chunk_config"]), str(first["profile"]))
        row: dict[str, object] = {name: float("nan") for name in ANSWER_COLUMNS}
        row["answerer"] = str(first["answerer"])
        if "threshold" in frame.columns:
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
        columns[pair] = row
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
