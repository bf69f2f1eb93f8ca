"""Retrieval metrics: token-level (character spans, also within context budgets), chunk-level (IDs) and
their aggregates."""

from __future__ import annotations

from .aggregate import MetricSummary, summarize, summarize_by_group, summarize_table
from .chunk_metrics import ChunkMetrics, chunk_metrics
from .context_budget import (
    ChunkTokenStarts,
    ContextBudgetMetrics,
    budgeted_spans,
    context_budget_metrics,
)
from .names import CONTEXT_BUDGETS
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
    "CONTEXT_BUDGETS",
    "ChunkMetrics",
    "ChunkSpanIndex",
    "ChunkTokenStarts",
    "ContextBudgetMetrics",
    "CopyAwareSpanMetrics",
    "MetricSummary",
    "OmegaPrecision",
    "ReferenceCopies",
    "ReferenceDuplication",
    "SpanMetrics",
    "budgeted_spans",
    "chunk_metrics",
    "context_budget_metrics",
    "precision_omega",
    "span_metrics",
    "span_metrics_copies",
    "summarize",
    "summarize_by_group",
    "summarize_table",
]
