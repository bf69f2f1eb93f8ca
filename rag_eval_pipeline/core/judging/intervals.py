"""Character sets as merged intervals per document (core/spans.py's ``Merged``): union, difference,
intersection. What judging needs on top of core/spans.py: the text some judge read, minus the text
another read, and so on, without ever counting a character twice."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..spans import Interval, Merged, merge_intervals
from ..types import CharacterSpan, DocumentId


def union(*sets: Mapping[DocumentId, list[Interval]]) -> Merged:
    """The characters in any of the merged interval sets, merged (touching intervals joined)."""
    return merge_intervals(_as_spans(s for m in sets for s in _items(m)))


def subtract(a: Mapping[DocumentId, list[Interval]], b: Mapping[DocumentId, list[Interval]]) -> Merged:
    """The characters of ``a`` not in ``b`` (both merged), as merged intervals."""
    out: Merged = {}
    for doc_id, intervals in a.items():
        holes = b.get(doc_id, [])
        kept: list[Interval] = []
        for start, end in intervals:
            cursor = start
            for hole_start, hole_end in holes:
                if hole_end <= cursor or hole_start >= end:
                    continue
                if hole_start > cursor:
                    kept.append((cursor, hole_start))
                cursor = max(cursor, hole_end)
                if cursor >= end:
                    break
            if cursor < end:
                kept.append((cursor, end))
        if kept:
            out[doc_id] = kept
    return out


def intersect(a: Mapping[DocumentId, list[Interval]], b: Mapping[DocumentId, list[Interval]]) -> Merged:
    """The characters in both (merged) interval sets, as merged intervals."""
    return subtract(a, subtract(a, b))


def overlaps(merged: Mapping[DocumentId, list[Interval]], doc_id: DocumentId, start: int, end: int) -> bool:
    """Whether [start, end) shares a character with ``merged`` (touching does not count)."""
    return any(s < end and start < e for s, e in merged.get(doc_id, []))


def size(merged: Mapping[DocumentId, list[Interval]]) -> int:
    """Characters in merged (disjoint) intervals."""
    return sum(e - s for intervals in merged.values() for s, e in intervals)


def _items(merged: Mapping[DocumentId, list[Interval]]) -> Iterable[tuple[DocumentId, int, int]]:
    for doc_id, intervals in merged.items():
        for start, end in intervals:
            yield doc_id, start, end


def _as_spans(items: Iterable[tuple[DocumentId, int, int]]) -> list[_Range]:
    return [_Range(d, s, e) for d, s, e in items]


@dataclass(frozen=True)
class _Range:
    doc_id: DocumentId
    start: int
    end: int


def spans_of(
    merged: Mapping[DocumentId, list[Interval]], texts: Mapping[DocumentId, str]
) -> tuple[CharacterSpan, ...]:
    """Merged intervals as character spans, with their text from ``texts`` (document texts)."""
    return tuple(CharacterSpan(d, s, e, texts[d][s:e]) for d, s, e in _items(merged))
