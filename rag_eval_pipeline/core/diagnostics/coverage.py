"""The most reference text any k chunks can hold: the best recall a chunk set allows at k.

For a question with merged reference G and a set of chunks C, the best cover at k is

    best_k = max over S ⊆ C with |S| <= k of |merge(S) ∩ G|

(characters, merged: no character counts twice). No retriever can return more reference text in k
chunks, so best_k / |G| bounds span recall at k; what lies beyond it is lost to chunking (the reference
is spread over more than k chunks, or no chunk holds it).

Computed exactly: chunks are intervals on a line, so after dropping every chunk contained in another
(a container covers at least as much), the rest sorted by start also have increasing ends, and a chosen
set adds, chunk after chunk, only the part beyond the previous chunk's end. Per document,

    f[j][i] = max( cover(i) if j == 1, max over p < i of f[j-1][p] + |G ∩ [max(s_i, e_p), e_i)| )

(the best j chunks ending with chunk i), O(n² k) for the n chunks overlapping the reference there;
documents are then combined by the best split of k among them. Ties keep the first set found, in
(start, end, chunk id) order, so the same inputs give the same set.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..spans import ChunkLike, Interval
from ..types import ChunkId, DocumentId


@dataclass(frozen=True)
class Cover:
    """The most reference characters ``len(chunks) <= k`` chunks hold, and one such set (sorted by
    document and position)."""

    characters: int
    chunks: tuple[ChunkId, ...]


class ReferenceLength:
    """|G ∩ [a, b)| for one document's merged reference intervals, by prefix sums and bisection."""

    def __init__(self, intervals: Sequence[Interval]) -> None:
        self._starts = [s for s, _ in intervals]
        self._intervals = list(intervals)
        self._before = [0]
        for s, e in intervals:
            self._before.append(self._before[-1] + e - s)

    def within(self, a: int, b: int) -> int:
        if b <= a:
            return 0
        return self._up_to(b) - self._up_to(a)

    def _up_to(self, x: int) -> int:
        """Reference characters before offset ``x``."""
        i = bisect_left(self._starts, x)  # intervals [0, i) start before x
        if i == 0:
            return 0
        s, e = self._intervals[i - 1]
        return self._before[i - 1] + min(e, x) - s


def best_cover(reference: Mapping[DocumentId, list[Interval]], chunks: Iterable[ChunkLike], k: int) -> Cover:
    """The best cover of the merged ``reference`` by at most ``k`` of ``chunks`` (see the module)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    per_doc: dict[DocumentId, list[ChunkLike]] = {}
    for chunk in chunks:
        if chunk.doc_id in reference:
            per_doc.setdefault(chunk.doc_id, []).append(chunk)
    tables = []
    for doc_id in sorted(per_doc):
        length = ReferenceLength(reference[doc_id])
        useful = _without_contained([c for c in per_doc[doc_id] if length.within(c.start, c.end) > 0])
        if useful:
            tables.append(_document_table(useful, length, k))
    return _combined(tables, k)


def _without_contained(chunks: list[ChunkLike]) -> list[ChunkLike]:
    """Chunks no other chunk contains (of identical ones, the smallest id), by start: their ends then
    increase strictly too."""
    kept: list[ChunkLike] = []
    furthest = -1
    for chunk in sorted(chunks, key=lambda c: (c.start, -c.end, c.chunk_id)):
        if chunk.end > furthest:
            kept.append(chunk)
            furthest = chunk.end
    return kept


# per number of chunks j (index j, 0..k): the best characters and the chunks reaching them
_Table = list[tuple[int, tuple[ChunkId, ...]]]


def _document_table(chunks: list[ChunkLike], length: ReferenceLength, k: int) -> _Table:
    n = len(chunks)
    most = min(k, n)
    alone = [length.within(c.start, c.end) for c in chunks]
    # best[j][i]: the most characters j chunks ending with chunk i cover; parent[j][i]: the one before
    best: list[list[int]] = [[0] * n for _ in range(most + 1)]
    parent: list[list[int]] = [[-1] * n for _ in range(most + 1)]
    if most:
        best[1] = alone[:]
    for j in range(2, most + 1):
        for i in range(j - 1, n):
            top, via = -1, -1
            for p in range(j - 2, i):
                gained = best[j - 1][p] + length.within(max(chunks[i].start, chunks[p].end), chunks[i].end)
                if gained > top:
                    top, via = gained, p
            best[j][i], parent[j][i] = top, via
    table: _Table = [(0, ())]
    for j in range(1, k + 1):
        if j > most:
            table.append(table[-1])  # more chunks than there are useful ones add nothing
            continue
        i = max(range(j - 1, n), key=lambda x: (best[j][x], -x))
        if best[j][i] <= table[-1][0]:
            table.append(table[-1])  # at most j chunks: never worse than at most j - 1
            continue
        chosen, at, level = [], i, j
        while at >= 0:
            chosen.append(chunks[at].chunk_id)
            at, level = parent[level][at], level - 1
        table.append((best[j][i], tuple(reversed(chosen))))
    return table


def _combined(tables: list[_Table], k: int) -> Cover:
    """The best split of k chunks among the documents (each table non-decreasing in j)."""
    total: _Table = [(0, ())] * (k + 1)
    for table in tables:
        merged: _Table = []
        for j in range(k + 1):
            top = max(range(j + 1), key=lambda m: (total[j - m][0] + table[m][0], -m))
            merged.append((total[j - top][0] + table[top][0], total[j - top][1] + table[top][1]))
        total = merged
    characters, chunks = total[k]
    return Cover(characters, chunks)
