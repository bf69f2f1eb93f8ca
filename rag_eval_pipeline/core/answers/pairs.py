"""Which chunk config x profile pairs the LLM judge sees: the best N by a cheaper metric."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..metrics.names import SEMANTIC_SIMILARITY
from .settings import RankBy
from .tables import ok_mean


def rank_pairs(metrics: Mapping[str, pd.DataFrame], rank_by: RankBy) -> pd.DataFrame:
    """One row per evaluated pair with the mean of ``rank_by`` over the rows where it is ok, best first
    (ties by the mean semantic similarity, then by name, so the choice is stable); ``selected_rank``
    is 1.. for pairs with a value and missing for pairs where the metric never applied."""
    rows = []
    for frame in metrics.values():
        if frame.empty:
            continue
        first = frame.iloc[0]
        rows.append(
            {
                "chunk_config": str(first["chunk_config"]),
                "profile": str(first["profile"]),
                "rank_by": rank_by,
                "rank_value": ok_mean(frame, rank_by),
                "tie_break": ok_mean(frame, SEMANTIC_SIMILARITY),
                "answers_run_id": str(first.get("answers_run_id", "")),
            }
        )
    ranking = pd.DataFrame(
        rows, columns=["chunk_config", "profile", "rank_by", "rank_value", "tie_break", "answers_run_id"]
    )
    ranking = ranking.sort_values(
        ["rank_value", "tie_break", "chunk_config", "profile"],
        ascending=[False, False, True, True],
        na_position="last",
        kind="stable",
    ).reset_index(drop=True)
    has_value = ranking["rank_value"].notna()
    ranking["selected_rank"] = pd.array(
        [i + 1 if ok else None for i, ok in enumerate(has_value)], dtype="Int64"
    )
    return ranking.drop(columns="tie_break")
