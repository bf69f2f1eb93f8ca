"""Metric and cost names as a reader sees them (``span IoU``, ``recall@k``, ``p95 search (ms)``), and
cost values as text (``923``, ``4.1 ms``, ``$0.142``, ``1.2 MB``): the same in every view that labels
columns or axes or quotes a cost: the terminal (``render_text.py``, ``render_pareto.py``), the asset's
table (``render_table.py``), the recommendation and the HTML report (``render_html.py``)."""

from __future__ import annotations

import math

from ..evaluation.costs import (
    CONTEXT_TOKENS_MEAN,
    INDEX_BYTES,
    INDEX_USD,
    LATENCY_P50,
    LATENCY_P95,
    USD_PER_1K,
)
from ..metrics.names import (
    CONTEXT_TOKENS,
    HIT_AT_K,
    HYBRID,
    KEYWORD,
    LLM_JUDGE,
    MRR,
    NDCG_AT_K,
    RECALL_AT_K,
    SEMANTIC_DYNAMIC,
    SEMANTIC_FIXED,
    SPAN_IOU,
    SPAN_PRECISION,
    SPAN_RECALL,
)

LABELS = {
    SPAN_RECALL: "span recall",
    SPAN_PRECISION: "span precision",
    SPAN_IOU: "span IoU",
    RECALL_AT_K: "recall@k",
    HIT_AT_K: "hit@k",
    MRR: "MRR",
    NDCG_AT_K: "nDCG@k",
    KEYWORD: "keyword",
    SEMANTIC_DYNAMIC: "semantic (fitted)",
    SEMANTIC_FIXED: "semantic (fixed)",
    HYBRID: "hybrid",
    LLM_JUDGE: "LLM judge",
    CONTEXT_TOKENS_MEAN: "context tokens",
    CONTEXT_TOKENS: "context tokens",
    LATENCY_P50: "p50 search (ms)",
    LATENCY_P95: "p95 search (ms)",
    USD_PER_1K: "$ per 1k questions",
    INDEX_BYTES: "index size",
    INDEX_USD: "index embedding $",
}


def label(metric: str) -> str:
    """The metric's label; an unlisted metric (``span_recall_1000t``) with spaces for underscores."""
    return LABELS.get(metric, metric.replace("_", " "))


def cost_text(column: str, value: float | None) -> str:
    """A cost as text: tokens as a whole number (``1,234``), milliseconds to two significant digits below
    10 (``4.1 ms``), dollars to three (``$0.142``), bytes in KB/MB/GB; ``n/a`` when unknown."""
    if value is None or math.isnan(value):
        return "n/a"
    if column in (LATENCY_P50, LATENCY_P95):
        return f"{value:.2g} ms" if value < 10 else f"{value:,.0f} ms"
    if column in (USD_PER_1K, INDEX_USD):
        return "$0" if value == 0 else f"${value:.3g}" if value < 1000 else f"${value:,.0f}"
    if column == INDEX_BYTES:
        size, unit = value, "B"
        for unit in ("B", "KB", "MB", "GB", "TB"):
            if size < 1000 or unit == "TB":
                break
            size /= 1000
        return f"{size:.0f} {unit}" if unit == "B" else f"{size:.3g} {unit}"
    return f"{value:,.0f}"
