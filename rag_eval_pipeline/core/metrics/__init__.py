"""Retrieval metrics: token-level (character spans), chunk-level (IDs) and their aggregates."""

from __future__ import annotations

from .aggregate import MetricSummary, summarize, summarize_by_group, summarize_table
from .chunk_metrics import ChunkMetrics, chunk_metrics
from .span_metrics import ChunkSpanIndex, OmegaPrecision, SpanMetrics, precision_omega, span_metrics

__all__ = [
    "ChunkMetrics",
    "ChunkSpanIndex",
    "MetricSummary",
    "OmegaPrecision",
    "SpanMetrics",
    "chunk_metrics",
    "precision_omega",
    "span_metrics",
    "summarize",
    "summarize_by_group",
    "summarize_table",
]
