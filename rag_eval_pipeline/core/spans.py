"""Character-interval arithmetic shared by the token-level metrics and the ground-truth conversion.

Spans are merged per document into sorted disjoint intervals first, so overlapping or duplicated spans
never count a character twice; all sizes are then computed on intervals, never per character.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from itertools import accumulate
from typing import Generic, Protocol, TypeVar

from .types import ChunkId, DocumentId

Interval = tuple[int, int]
Merged = dict[DocumentId, list[Interval]]


class SpanLike(Protocol):
    """Anything located in a document: ``CharacterSpan``, ``PositionAwareChunk``, test doubles."""

    @property
    def doc_id(self) -> DocumentId: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


class ChunkLike(SpanLike, Protocol):
    @property
    def chunk_id(self) -> ChunkId: ...


def _check(span: SpanLike) -> None:
    if not 0 <= span.start <= span.end:
        raise ValueError(f"span {span.doc_id}[{span.start}:{span.end}] needs 0 <= start <= end")


def merge_intervals(spans: Iterable[SpanLike]) -> Merged:
    """Sorted, disjoint intervals per document; overlapping and touching intervals are joined and
    empty ones dropped (they hold no character)."""
    by_doc: dict[DocumentId, list[Interval]] = {}
    for span in spans:
        _check(span)
        if span.end > span.start:
            by_doc.setdefault(span.doc_id, []).append((span.start, span.end))
    merged: Merged = {}
    for doc_id in sorted(by_doc):
        out: list[Interval] = []
        for start, end in sorted(by_doc[doc_id]):
            if out and start <= out[-1][1]:
                if end > out[-1][1]:
                    out[-1] = (out[-1][0], end)
            else:
                out.append((start, end))
        merged[doc_id] = out
    return merged


def total_length(merged: Mapping[DocumentId, list[Interval]]) -> int:
    """Characters covered by merged (disjoint) intervals."""
    return sum(end - start for intervals in merged.values() for start, end in intervals)


def _intersect_sorted(a: list[Interval], b: list[Interval]) -> int:
    i = j = shared = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            shared += hi - lo
        # Advance whichever interval ends first; it cannot meet anything further along the other list.
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return shared


def intersection_length(
    a: Mapping[DocumentId, list[Interval]], b: Mapping[DocumentId, list[Interval]]
) -> int:
    """Characters in both merged interval sets, by a linear two-pointer sweep per shared document."""
    return sum(_intersect_sorted(a[doc_id], b[doc_id]) for doc_id in a.keys() & b.keys())


ChunkT = TypeVar("ChunkT", bound=ChunkLike)


class ChunkSpanIndex(Generic[ChunkT]):
    """A chunk set indexed by document once, so overlap queries cost a bisect, not a corpus scan.

    Chunks are sorted by start; a running maximum of their ends is non-decreasing, so a second bisect
    skips every chunk that ends at or before the query start, even when chunks overlap each other or
    differ in length.
    """

    def __init__(self, chunks: Iterable[ChunkT]) -> None:
        by_doc: dict[DocumentId, list[ChunkT]] = {}
        for chunk in chunks:
            _check(chunk)
            if chunk.end > chunk.start:  # an empty chunk overlaps nothing
                by_doc.setdefault(chunk.doc_id, []).append(chunk)
        self._chunks: dict[DocumentId, list[ChunkT]] = {}
        self._starts: dict[DocumentId, list[int]] = {}
        self._max_ends: dict[DocumentId, list[int]] = {}
        for doc_id, doc_chunks in by_doc.items():
            doc_chunks.sort(key=lambda c: (c.start, c.end, c.chunk_id))
            self._chunks[doc_id] = doc_chunks
            self._starts[doc_id] = [c.start for c in doc_chunks]
            self._max_ends[doc_id] = list(accumulate((c.end for c in doc_chunks), max))

    def __len__(self) -> int:
        return sum(len(chunks) for chunks in self._chunks.values())

    def _overlapping_positions(self, span: SpanLike) -> range:
        starts = self._starts.get(span.doc_id)
        if starts is None or span.end <= span.start:
            return range(0)
        lo = bisect_right(self._max_ends[span.doc_id], span.start)
        hi = bisect_left(starts, span.end)
        return range(lo, hi)

    def _touching_positions(self, span: SpanLike) -> range:
        starts = self._starts.get(span.doc_id)
        if starts is None:
            return range(0)
        lo = bisect_left(self._max_ends[span.doc_id], span.start)
        hi = bisect_right(starts, span.end)
        return range(lo, hi)

    def overlapping(self, spans: Iterable[SpanLike]) -> list[ChunkT]:
        """Chunks sharing at least one character with any of ``spans`` (touching is not overlapping),
        each once, sorted by (doc_id, start, end, chunk_id)."""
        return self._matching(spans, touch=False)

    def touching(self, spans: Iterable[SpanLike]) -> list[ChunkT]:
        """Chunks that overlap or only touch any of ``spans`` (a chunk ending where a span starts, or
        the reverse; an empty span touches the chunks around its position), as Chroma's closed-interval
        ``intersect_two_ranges`` finds them; each once, sorted like ``overlapping``."""
        return self._matching(spans, touch=True)

    def _matching(self, spans: Iterable[SpanLike], touch: bool) -> list[ChunkT]:
        found: dict[DocumentId, set[int]] = {}
        for span in spans:
            _check(span)
            positions = self._touching_positions(span) if touch else self._overlapping_positions(span)
            if not positions:
                continue
            chunks = self._chunks[span.doc_id]
            hits = found.setdefault(span.doc_id, set())
            if touch:
                hits.update(p for p in positions if chunks[p].end >= span.start)
            else:
                hits.update(p for p in positions if chunks[p].end > span.start)
        return [self._chunks[doc_id][p] for doc_id in sorted(found) for p in sorted(found[doc_id])]
