"""Token-level (character-span) metrics of one question.

Ground truth and retrieved chunks are merged per document before counting, so overlapping chunks or
duplicated reference spans never count a character twice. The ``*_chroma`` variants compute what the
Chroma technical report's code computes, so numbers stay comparable with it. The ``*_copies`` variants
also credit a retrieved copy of the reference text found elsewhere in the corpus
(``reference_copies.py``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..spans import (
    ChunkSpanIndex,
    ChunkT,
    Interval,
    Merged,
    SpanLike,
    intersection_length,
    merge_intervals,
    total_length,
)
from ..types import DocumentId
from .reference_copies import ReferenceCopies, TextCopy

__all__ = [
    "ChunkSpanIndex",
    "CopyAwareSpanMetrics",
    "OmegaPrecision",
    "SpanMetrics",
    "precision_omega",
    "span_metrics",
    "span_metrics_copies",
]


@dataclass(frozen=True)
class SpanMetrics:
    """One question's span metrics. G = the reference spans, R = the retrieved chunks' spans, each merged
    per document into disjoint intervals; I = the characters in both:

        span_recall      = I / |G|
        span_precision   = I / |R|
        span_iou         = I / (|R| + |G| - I)
        precision_chroma = I / sum(len(r))
        iou_chroma       = I / (sum(len(r)) + |G| - I)

    The chroma variants do not merge the retrieved chunks (an overlap counts twice), as Chroma's report."""

    span_recall: float
    span_precision: float
    span_iou: float
    precision_chroma: float
    iou_chroma: float


@dataclass(frozen=True)
class CopyAwareSpanMetrics:
    span_recall_copies: float
    span_precision_copies: float
    span_iou_copies: float


@dataclass(frozen=True)
class OmegaPrecision:
    """The best precision a chunk set allows for a question: retrieving exactly the chunks that overlap
    its reference by >= 1 character (``precision_omega``), and that figure as Chroma computes it."""

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
    """The precision of the chunks (from the whole chunk set) that overlap the reference.

    ``precision_omega = |C ∩ G| / |C|``, C = the merged chunks overlapping the reference by >= 1
    character. ``precision_omega_chroma`` is what Chroma's ``_full_precision_score``
    (chunking_evaluation, ``base_evaluation.py``) computes: ``|C' ∩ G| / |C' ∪ G|``, where C' also holds
    the chunks that only touch a reference (chunk end == reference start or the reverse: its
    ``intersect_two_ranges`` tests ``start <= end``, so a zero-length intersection counts) and the
    denominator adds the reference characters no chunk covers (its "unused highlights"). Both merge
    the chunks. With chunks that cover the reference and no chunk merely touching it, the two agree.
    Chroma scores one document per question; here the sets are taken per document and summed.

    Args:
        ground_truth: the question's reference spans.
        chunk_set: every chunk of the chunk config; a prebuilt ``ChunkSpanIndex`` when scoring many
            questions against one chunk set (a plain iterable is indexed on each call).

    Returns:
        Both precisions, 0 when no chunk overlaps the reference.
    """
    gt_spans, gt, gt_size = _ground_truth(ground_truth)
    index = chunk_set if isinstance(chunk_set, ChunkSpanIndex) else ChunkSpanIndex(chunk_set)
    covered = merge_intervals(index.overlapping(gt_spans))
    shared = intersection_length(covered, gt)
    # touching chunks hold no reference character: the numerator is the same, only the denominator grows
    covered_chroma = merge_intervals(index.touching(gt_spans))
    return OmegaPrecision(
        precision_omega=_ratio(shared, total_length(covered)),
        precision_omega_chroma=_ratio(shared, total_length(covered_chroma) + gt_size - shared),
    )


def span_metrics_copies(
    ground_truth: Iterable[SpanLike], retrieved: Sequence[SpanLike], copies: ReferenceCopies
) -> CopyAwareSpanMetrics:
    """Span recall, precision and IoU that also credit a retrieved copy of the reference text.

    G = the reference spans merged per document; each merged interval g has a text t_g, and the copies
    of g are every occurrence of t_g as an exact substring of any corpus document (overlapping
    occurrences included; g itself is one). R = the retrieved chunks' spans merged per document.
    I* = the maximum number of (reference character, retrieved character) pairs, each character in at
    most one pair, where the character at offset i of g may pair with the character at offset i of any
    copy of g (position copy.start + i of the copy's document) when that character lies in R: a maximum
    bipartite matching (Hopcroft-Karp, scipy). Then

        span_recall_copies = I* / |G|
        span_precision_copies = I* / |R|
        span_iou_copies = I* / (|R| + |G| - I*)

    No character counts twice, I <= I* <= min(|G|, |R|) (I: the position-exact intersection of
    ``span_metrics``), and without duplicated reference text the three equal span_recall, precision and
    IoU: when no reference has a copy that reaches R, I* = I is returned without a matching.

    Args:
        ground_truth: the question's reference spans (at least one character).
        retrieved: the spans of the retrieved chunks, in any order, overlaps allowed.
        copies: where reference texts occur in the corpus, shared by every question of a run.

    Returns:
        The three metrics; an empty retrieval scores 0. Raises ``ValueError`` when the ground truth
        covers no character.
    """
    _, gt, gt_size = _ground_truth(ground_truth)
    ret = merge_intervals(retrieved)
    ret_size = total_length(ret)
    matched = _copy_aware_intersection(gt, ret, copies.of_merged(gt)) if ret_size else 0
    return CopyAwareSpanMetrics(
        span_recall_copies=matched / gt_size,
        span_precision_copies=_ratio(matched, ret_size),
        span_iou_copies=_ratio(matched, ret_size + gt_size - matched),
    )


class _RetrievedColumns:
    """The characters of merged retrieved intervals numbered 0 .. |R|-1, document by document."""

    def __init__(self, ret: Mapping[DocumentId, list[Interval]]) -> None:
        self._ends: dict[DocumentId, list[int]] = {}
        self._bases: dict[DocumentId, list[int]] = {}
        self._intervals = ret
        base = 0
        for doc_id in sorted(ret):
            self._ends[doc_id] = [end for _, end in ret[doc_id]]
            self._bases[doc_id] = []
            for start, end in ret[doc_id]:
                self._bases[doc_id].append(base)
                base += end - start

    def overlaps(self, doc_id: DocumentId, start: int, end: int) -> list[tuple[int, int, int]]:
        """(from, to, column of ``from``) for each piece of [start, end) that lies in R."""
        intervals = self._intervals.get(doc_id)
        if not intervals:
            return []
        pieces = []
        at = bisect_right(self._ends[doc_id], start)
        while at < len(intervals) and intervals[at][0] < end:
            lo, hi = max(start, intervals[at][0]), min(end, intervals[at][1])
            pieces.append((lo, hi, self._bases[doc_id][at] + lo - intervals[at][0]))
            at += 1
        return pieces


def _copy_aware_intersection(
    gt: Merged, ret: Merged, located: Mapping[tuple[DocumentId, Interval], tuple[TextCopy, ...]]
) -> int:
    """I*: the maximum matching between reference and retrieved characters along the copies."""
    shared = intersection_length(ret, gt)
    if all(len(found) == 1 for found in located.values()):
        return shared  # no reference text occurs twice: every edge joins a character to itself
    columns = _RetrievedColumns(ret)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    through_copy = False
    row_base = 0
    for (doc_id, (start, end)), found in located.items():
        for copy in found:
            own = copy.doc_id == doc_id and copy.start == start
            for lo, hi, column in columns.overlaps(copy.doc_id, copy.start, copy.start + end - start):
                rows.append(np.arange(row_base + lo - copy.start, row_base + hi - copy.start))
                cols.append(np.arange(column, column + hi - lo))
                through_copy = through_copy or not own
        row_base += end - start
    if not through_copy:
        return shared  # copies exist, but none reaches the retrieved characters
    # scipy only here: most questions never get this far, and importing it costs every process ~0.3 s
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_bipartite_matching

    row_index, col_index = np.concatenate(rows), np.concatenate(cols)
    graph = csr_array(
        (np.ones(len(row_index), dtype=np.int8), (row_index, col_index)),
        shape=(row_base, total_length(ret)),
    )
    return int(np.count_nonzero(maximum_bipartite_matching(graph, perm_type="column") >= 0))
