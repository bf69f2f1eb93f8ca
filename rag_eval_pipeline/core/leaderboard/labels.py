"""Metric names as a reader sees them (``span IoU``, ``recall@k``), the same in every view that labels
columns or axes: the asset's table (``render_table.py``) and the HTML report (``render_html.py``)."""

from __future__ import annotations

LABELS = {
    "span_recall": "span recall",
    "span_precision": "span precision",
    "span_iou": "span IoU",
    "recall_at_k": "recall@k",
    "hit_at_k": "hit@k",
    "mrr": "MRR",
    "ndcg_at_k": "nDCG@k",
    "keyword": "keyword",
    "semantic_dynamic": "semantic (fitted)",
    "semantic_fixed": "semantic (fixed)",
    "hybrid": "hybrid",
    "llm_judge": "LLM judge",
}


def label(metric: str) -> str:
    """The metric's label; an unlisted metric (``span_recall_1000t``) with spaces for underscores."""
    return LABELS.get(metric, metric.replace("_", " "))
