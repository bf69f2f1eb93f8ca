"""Token-level (character-span) metrics of one question.

Ground truth and retrieved chunks are merged per document before counting, so overlapping chunks or
duplicated reference spans never count a character twice. The ``*_chroma`` variants keep the
unmerged denominators of the Chroma technical report, so numbers stay comparable with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..spans import (
    ChunkSpanIndex,
    ChunkT,
    Merged,
    SpanLike,
    intersection_length,
    merge_intervals,
    total_length,
)

__all__ = ["ChunkSpanIndex", "OmegaPrecision", "SpanMetrics", "precision_omega", "span_metrics"]


@dataclass(frozen=True)
class SpanMetrics:
    span_recall: float
    span_precision: float
    span_iou: float
    precision_chroma: float
    iou_chroma: float


@dataclass(frozen=True)
class OmegaPrecision:
    """The best precision a chunk set allows for a question: retrieving exactly the chunks that touch
    its reference by >= 1 character."""

    precision_omega: float
    precision_omega_chroma: float


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator > 0 else 0.0


def _ground_truth(ground_truth: Iterable[SpanLike]) -> tuple[list[SpanLike], Merged, int]:
    spans = list(ground_truth)
    merged = merge_intervals(spans)
    size = total_length(merged)
    if size == 0:
        raise ValueError("a question needs at least one non-empty ground-truth span to be scored")
    return spans, merged, size


def span_metrics(ground_truth: Iterable[SpanLike], retrieved: Sequence[SpanLike]) -> SpanMetrics:
    """Score the spans of the retrieved chunks against the question's reference spans.

    Raises ``ValueError`` when the ground truth covers no character (recall is undefined); an empty
    retrieval scores 0 on every metric.
    """
    _, gt, gt_size = _ground_truth(ground_truth)
    ret = merge_intervals(retrieved)
    shared = intersection_length(ret, gt)
    ret_size = total_length(ret)
    ret_sum = sum(span.end - span.start for span in retrieved)
    return SpanMetrics(
        span_recall=shared / gt_size,
        span_precision=_ratio(shared, ret_size),
        span_iou=_ratio(shared, ret_size + gt_size - shared),
        precision_chroma=_ratio(shared, ret_sum),
        iou_chroma=_ratio(shared, ret_sum + gt_size - shared),
    )


def precision_omega(
    ground_truth: Iterable[SpanLike], chunk_set: ChunkSpanIndex[ChunkT] | Iterable[ChunkT]
) -> OmegaPrecision:
    """Precision of the chunks (from the whole chunk set) that overlap the reference by >= 1 character.

    Pass a prebuilt ``ChunkSpanIndex`` when scoring many questions against one chunk set; a plain
    iterable is indexed on each call. 0 when no chunk overlaps the reference.
    """
    gt_spans, gt, _ = _ground_truth(ground_truth)
    index = chunk_set if isinstance(chunk_set, ChunkSpanIndex) else ChunkSpanIndex(chunk_set)
    touching = index.overlapping(gt_spans)
    covered = merge_intervals(touching)
    shared = intersection_length(covered, gt)
    return OmegaPrecision(
        precision_omega=_ratio(shared, total_length(covered)),
        precision_omega_chroma=_ratio(shared, sum(c.end - c.start for c in touching)),
    )
