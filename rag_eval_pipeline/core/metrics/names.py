"""The names of the per-question metrics, retrieval and answers, in one place, and the headline lists
every view picks from: the evaluation computes them (core/evaluation/evaluation.py, core/answers/), the settings
name them (the leaderboard's objective), history and the leaderboard store them. A light module, so a
settings file can check a name without importing the evaluation.

The package spells a metric's name only here (``rag_eval_pipeline_tests/test_layout.py`` guards it):
elsewhere a name is one of the constants below, or built by ``budget_metric_name``."""

from __future__ import annotations

from typing import Final, Literal

# Span metrics (span_metrics.py): the reference characters the top-k holds, over the reference
# (recall), over the retrieved text (precision) and over their union (IoU); chroma variants.
SPAN_RECALL = "span_recall"
SPAN_PRECISION = "span_precision"
SPAN_IOU = "span_iou"
PRECISION_CHROMA = "precision_chroma"
IOU_CHROMA = "iou_chroma"
SPAN_METRICS = (SPAN_RECALL, SPAN_PRECISION, SPAN_IOU, PRECISION_CHROMA, IOU_CHROMA)
# span recall, precision and IoU that credit a retrieved copy of the reference text (span_metrics_copies)
SPAN_RECALL_COPIES = "span_recall_copies"
SPAN_PRECISION_COPIES = "span_precision_copies"
SPAN_IOU_COPIES = "span_iou_copies"
COPY_METRICS = (SPAN_RECALL_COPIES, SPAN_PRECISION_COPIES, SPAN_IOU_COPIES)
PRECISION_OMEGA = "precision_omega"
PRECISION_OMEGA_CHROMA = "precision_omega_chroma"
OMEGA_METRICS = (PRECISION_OMEGA, PRECISION_OMEGA_CHROMA)
# Chunk-level metrics (chunk_metrics.py: the fields of ChunkMetrics), over the chunks that overlap the
# reference.
RECALL = "recall"
PRECISION = "precision"
F1 = "f1"
RECALL_AT_K = "recall_at_k"
HIT_AT_K = "hit_at_k"
MRR = "mrr"
NDCG_AT_K = "ndcg_at_k"
AVERAGE_PRECISION = "average_precision"
CHUNK_METRICS = (RECALL, PRECISION, F1, RECALL_AT_K, HIT_AT_K, MRR, NDCG_AT_K, AVERAGE_PRECISION)

# Context budgets (context_budget.py) in cl100k_base tokens: about 2, 4 and 8 chunks of the published
# studies' 250 tokens. The span metrics within each budget are BUDGET_METRICS.
CONTEXT_BUDGETS: tuple[int, ...] = (500, 1000, 2000)
BUDGETED_SPAN_METRICS = (SPAN_RECALL, SPAN_PRECISION, SPAN_IOU)
# The per-question cl100k tokens of all k retrieved chunks: what the generator is given at top-k.
CONTEXT_TOKENS = "context_tokens"


def budget_metric_name(metric: str, budget: int) -> str:
    """``span_recall`` at 1000 tokens is ``span_recall_1000t``."""
    return f"{metric}_{budget}t"


BUDGET_METRICS = tuple(
    budget_metric_name(metric, budget) for budget in CONTEXT_BUDGETS for metric in BUDGETED_SPAN_METRICS
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


# Answer metrics (core/answers/): whether an answer is correct, by method (agreement.py, hybrid.py) ...
KEYWORD: Final = "keyword"  # the reference's keywords are in the answer
SEMANTIC_SIMILARITY: Final = "semantic_similarity"  # the cosine of the answer and the reference
SEMANTIC_FIXED: Final = "semantic_fixed"  # that similarity over the fixed threshold
SEMANTIC_DYNAMIC: Final = "semantic_dynamic"  # ... over the threshold fitted on labelled answers
HYBRID: Final = "hybrid"  # semantic_dynamic, with the LLM judge deciding near the threshold
LLM_JUDGE: Final = "llm_judge"  # the LLM judge's verdict (its own table, answer_judgements)
CORRECTNESS_METRICS = (KEYWORD, SEMANTIC_SIMILARITY, SEMANTIC_FIXED, SEMANTIC_DYNAMIC, HYBRID)
# ... and how the answer uses its context, measurable in production without a reference (production.py)
CONTEXT_RELEVANCE = "context_relevance"
CONTEXT_PRECISION = "context_precision"
CITED_PRECISION_AT_K = "cited_precision_at_k"
CITED_MEAN_RANK = "cited_mean_rank"
CONTEXT_RECALL_HEURISTIC = "context_recall_heuristic"
CONTEXT_RECALL_LLM = "context_recall_llm"
AGGREGATED_CONFIDENCE = "aggregated_confidence"
MULTI_SOURCE_AGREEMENT = "multi_source_agreement"
PRODUCTION_METRICS = (
    CONTEXT_RELEVANCE,
    CONTEXT_PRECISION,
    CITED_PRECISION_AT_K,
    CITED_MEAN_RANK,
    CONTEXT_RECALL_HEURISTIC,
    CONTEXT_RECALL_LLM,
    AGGREGATED_CONFIDENCE,
    MULTI_SOURCE_AGREEMENT,
)
ANSWER_METRICS = (*CORRECTNESS_METRICS, LLM_JUDGE, *PRODUCTION_METRICS)
# The answer methods as types: ``Literal`` needs the names spelled, so they are spelled here, beside the
# constants (mypy checks a constant passed where one is expected).
EvaluationMethod = Literal["keyword", "semantic_fixed", "semantic_dynamic", "llm_judge", "hybrid"]
RankBy = Literal["semantic_similarity", "semantic_dynamic", "semantic_fixed", "keyword", "hybrid"]

# The metrics a reader of the board looks at first (every metric is in the table), in the order every
# view shows them: retrieval, then answers. Each view shows these or a named subset
# (core/leaderboard/board.py: ``headline_subset``).
HEADLINE_METRICS = (SPAN_RECALL, SPAN_PRECISION, SPAN_IOU, RECALL_AT_K, MRR, NDCG_AT_K)
HEADLINE_ANSWER_METRICS = (KEYWORD, SEMANTIC_DYNAMIC, HYBRID, LLM_JUDGE)

# Every metric name the package spells (test_layout.py: nowhere but here).
METRIC_NAMES = TOKEN_LEVEL_METRICS + ANSWER_METRICS
