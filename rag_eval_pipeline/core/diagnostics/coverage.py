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

(the best j chunks ending with chunk i), for the n chunks overlapping the reference there; documents are
then combined by the best split of k among them. Ties keep the first set found, in (start, end, chunk
id) order, so the same inputs give the same set.

No table is longer than the chunks that can add reference text: a document's table ends once every
reference character its chunks hold is covered (at most n entries), and the combined table once every
document's has ended. So the work does not grow with k beyond that: O(n² m) per document for the m <= n
chunks its best cover needs, and O(min(k, N) x n) to combine, N the useful chunks of all documents
(the diagnostics of top_k 2,000 took 51 s for 10 questions when the tables ran to k).
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


# per number of chunks j (index j, 0..): the best characters at most j chunks hold, and those chunks;
# it ends where more chunks add nothing (entry j beyond its end: its last entry)
_Table = list[tuple[int, tuple[ChunkId, ...]]]


def _document_table(chunks: list[ChunkLike], length: ReferenceLength, k: int) -> _Table:
    n = len(chunks)
    most = min(k, n)
    alone = [length.within(c.start, c.end) for c in chunks]
    reachable = _union_within([(c.start, c.end) for c in chunks], length)  # what all of them hold
    # best[j][i]: the most characters j chunks ending with chunk i cover; parent[j][i]: the one before
    best: list[list[int]] = [[0] * n, alone[:]]
    parent: list[list[int]] = [[-1] * n, [-1] * n]
    table: _Table = [(0, ())]
    for j in range(1, most + 1):
        if j >= 2:
            row, via_row = [-1] * n, [-1] * n
            for i in range(j - 1, n):
                top, via = -1, -1
                for p in range(j - 2, i):
                    gained = best[j - 1][p] + length.within(
                        max(chunks[i].start, chunks[p].end), chunks[i].end
                    )
                    if gained > top:
                        top, via = gained, p
                row[i], via_row[i] = top, via
            best.append(row)
            parent.append(via_row)
        i = max(range(j - 1, n), key=lambda x: (best[j][x], -x))
        if best[j][i] <= table[-1][0]:
            table.append(table[-1])  # at most j chunks: never worse than at most j - 1
            continue
        chosen, at, level = [], i, j
        while at >= 0:
            chosen.append(chunks[at].chunk_id)
            at, level = parent[level][at], level - 1
        table.append((best[j][i], tuple(reversed(chosen))))
        if best[j][i] == reachable:
            break  # every reference character these chunks hold is covered: more chunks add nothing
    return table


def _union_within(spans: list[tuple[int, int]], length: ReferenceLength) -> int:
    """Reference characters inside the union of ``spans`` (sorted by start)."""
    total, reach = 0, -1
    for start, end in spans:
        if end > reach:
            total += length.within(max(start, reach), end)
            reach = end
    return total


def _combined(tables: list[_Table], k: int) -> Cover:
    """The best split of at most k chunks among the documents (each table non-decreasing in j, and
    constant past its end). Entry j of the combined table takes the most characters over the splits
    a + b = j (a for the documents before, b for this one; the fewest to this one on a tie), which is
    the most over a + b <= j as both are non-decreasing; it ends once both have ended, so its length is
    bounded by the useful chunks, not by k."""
    total = [0]  # the documents so far: the most characters at most j chunks hold
    splits: list[list[int]] = []  # per document, per j of the table after it: the chunks it was given
    for table in tables:
        last_total, last_table = len(total) - 1, len(table) - 1
        merged: list[int] = []
        given: list[int] = []
        for j in range(min(k, last_total + last_table) + 1):
            low, high = max(0, j - last_total), min(j, last_table)
            b = max(range(low, high + 1), key=lambda m: (total[j - m] + table[m][0], -m))
            merged.append(total[j - b] + table[b][0])
            given.append(b)
        total = merged
        splits.append(given)
    j = len(total) - 1  # min(k, every useful chunk): at most k chunks
    chosen: list[tuple[ChunkId, ...]] = []
    for table, given in zip(reversed(tables), reversed(splits), strict=True):
        b = given[j]
        chosen.append(table[b][1])
        j -= b
    return Cover(total[-1], tuple(c for chunks in reversed(chosen) for c in chunks))
