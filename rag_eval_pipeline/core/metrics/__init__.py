"""Retrieval metrics: token-level (character spans), chunk-level (IDs) and their aggregates."""

from __future__ import annotations

from .aggregate import MetricSummary, summarize, summarize_by_group, summarize_table
from .chunk_metrics import ChunkMetrics, chunk_metrics
from .reference_copies import ReferenceCopies, ReferenceDuplication
from .span_metrics import (
    ChunkSpanIndex,
    CopyAwareSpanMetrics,
    OmegaPrecision,
    SpanMetrics,
    precision_omega,
    span_metrics,
    span_metrics_copies,
)

__all__ = [
    "ChunkMetrics",
    "ChunkSpanIndex",
    "CopyAwareSpanMetrics",
    "MetricSummary",
    "OmegaPrecision",
    "ReferenceCopies",
    "ReferenceDuplication",
    "SpanMetrics",
    "chunk_metrics",
    "precision_omega",
    "span_metrics",
    "span_metrics_copies",
    "summarize",
    "summarize_by_group",
    "summarize_table",
]
