"""The names of the per-question retrieval metrics, in one place: the evaluation computes them
(core/evaluation.py), the settings name them (the leaderboard's objective), history and the leaderboard
store them. A light module, so a settings file can check a name without importing the evaluation."""

from __future__ import annotations

from .context_budget import BUDGET_METRICS, CONTEXT_TOKENS

SPAN_METRICS = ("span_recall", "span_precision", "span_iou", "precision_chroma", "iou_chroma")
# span recall, precision and IoU that credit a retrieved copy of the reference text (span_metrics_copies)
COPY_METRICS = ("span_recall_copies", "span_precision_copies", "span_iou_copies")
OMEGA_METRICS = ("precision_omega", "precision_omega_chroma")
CHUNK_METRICS = (
    "recall",
    "precision",
    "f1",
    "recall_at_k",
    "hit_at_k",
    "mrr",
    "ndcg_at_k",
    "average_precision",
)
# The scores a leaderboard can rank by: every one higher-is-better, in [0, 1]. BUDGET_METRICS
# (context_budget.py) are these span scores within a context budget (span_recall_500t ... span_iou_2000t).
RANKABLE_METRICS = SPAN_METRICS + COPY_METRICS + OMEGA_METRICS + CHUNK_METRICS
# The cost beside the scores: the cl100k tokens of the k retrieved chunks. A count, yet in the metric list,
# unlike DUPLICATION_COLUMNS: those are summed over a run, while the mean of this one is the mean context
# the generator receives, so the summaries, history and leaderboard carry context_tokens_mean (and its CI)
# like any metric. Lower is cheaper: it is not in [0, 1], and not "higher is better" as the scores are.
CONTEXT_COST_METRICS = (CONTEXT_TOKENS,)
TOKEN_LEVEL_METRICS = RANKABLE_METRICS + BUDGET_METRICS + CONTEXT_COST_METRICS

# Traffic weighting. A question taken from real traffic carries how often users asked it
# (``metadata["count"]``, core/judging: ImportedQuery.count). When some question of a set has a count
# other than 1, every metric's mean weighted by the counts is reported beside its plain mean (each
# question once): ``<metric>_weighted_mean``; the per-question tables then carry the count as a column.
# When every count is 1 the two means are equal and neither column exists.
QUERY_COUNT_KEY = "count"  # the key of a question's metadata
QUERY_COUNT = "query_count"  # the per-question column of the metric tables
WEIGHTED_MEAN_SUFFIX = "_weighted_mean"


def weighted_mean_column(metric: str) -> str:
    """``span_recall_1000t`` weighted by traffic is ``span_recall_1000t_weighted_mean``."""
    return metric + WEIGHTED_MEAN_SUFFIX
