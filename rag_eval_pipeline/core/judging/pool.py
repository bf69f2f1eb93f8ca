"""TREC-style pooling: the text to judge for each query is the union of what every run put in its top N.

A run is a ranked list of character ranges per query: a configured setup (chunk config x retrieval
profile) or one of the two runs independent of the configs (BM25 and dense over fixed windows of the
documents, runner/pooling.py). The pool of a query is built in three steps, all on character ranges:

1. the top ``depth`` hits of every run, as (doc_id, start, end) ranges;
2. merged per document: overlapping or touching ranges become one passage, so no character is shown
   twice, however many runs or overlapping chunks found it;
3. cut at the boundaries of the text judges already read for the query (the ``read`` of its usable
   judgements): each piece is either text some judge read (``judged``) or text nobody read (``new``).

Only the new pieces are text to judge: a new chunk config whose chunks cover judged text adds nothing
to read; one that reaches past it adds the part past it. The judged pieces stay in the pool, so a
second annotator (for agreement) still sees every passage; what one annotator has still to read is
``unjudged_passages`` (core/judging/judged_at_k.py).

``found_by`` lists every run with a hit sharing a character with the passage, as "<run> #<rank>" with
the run's best rank there, best rank first (ties by run name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..corpus.corpus import Corpus
from ..spans import Merged, SpanLike, merge_intervals
from ..types import CharacterSpan, DocumentId
from .intervals import intersect, subtract
from .types import PooledPassage, QueryId

DEFAULT_DEPTH = 10


class RankedSpan(SpanLike, Protocol):
    """A hit of a run: where it is and its rank (1-based); ``RetrievedChunk`` is one."""

    @property
    def rank(self) -> int: ...


@dataclass(frozen=True)
class Hit:
    """A ranked range, for runs that are not retrieval results (tests, imports)."""

    doc_id: DocumentId
    start: int
    end: int
    rank: int


@dataclass(frozen=True)
class PoolRun:
    """One ranked list per query. ``name`` is what ``found_by`` shows: "<chunk config> x <profile>" for a
    setup, "bm25@windows-500" and "dense@windows-500" for the runs over fixed windows."""

    name: str
    hits: Mapping[QueryId, Sequence[RankedSpan]]

    def top(self, query_id: QueryId, depth: int) -> list[RankedSpan]:
        """The hits ranked 1..depth (by rank, then place, so equal ranks are cut the same way each time)."""
        ranked = sorted(self.hits.get(query_id, ()), key=lambda h: (h.rank, h.doc_id, h.start, h.end))
        return [h for h in ranked[:depth] if h.end > h.start]


@dataclass(frozen=True)
class QueryPool:
    """The pool of one query: the pieces judges already read and the new ones, each by document then
    start; ``passages`` all of them in that order."""

    query_id: QueryId
    judged: tuple[PooledPassage, ...]
    new: tuple[PooledPassage, ...]

    @property
    def passages(self) -> tuple[PooledPassage, ...]:
        return tuple(sorted((*self.judged, *self.new), key=lambda p: (p.span.doc_id, p.span.start)))

    @property
    def new_chars(self) -> int:
        """The characters to read: pooled text no judge has read."""
        return sum(len(p.span) for p in self.new)

    @property
    def judged_chars(self) -> int:
        return sum(len(p.span) for p in self.judged)

    @property
    def pooled_chars(self) -> int:
        return self.new_chars + self.judged_chars


def pool_query(
    query_id: QueryId,
    runs: Sequence[PoolRun],
    corpus: Corpus,
    depth: int = DEFAULT_DEPTH,
    read: Mapping[DocumentId, list[tuple[int, int]]] | None = None,
) -> QueryPool:
    """The pool of one query over ``runs`` at ``depth``, cut at the boundaries of ``read`` (the merged
    text judges already read for it)."""
    if depth < 1:
        raise ValueError(f"pool depth must be at least 1, got {depth}")
    hits = [(run.name, hit) for run in runs for hit in run.top(query_id, depth)]
    pooled = merge_intervals(hit for _, hit in hits)
    judged = intersect(pooled, read or {})
    fresh = subtract(pooled, read or {})
    found: dict[bool, list[PooledPassage]] = {False: [], True: []}
    for pieces, is_new in ((judged, False), (fresh, True)):
        for doc_id, intervals in pieces.items():
            document = corpus[doc_id]
            for start, end in intervals:
                span = CharacterSpan(doc_id, start, end, document.text[start:end])
                found[is_new].append(
                    PooledPassage(query_id, span, document.sha256, _found_by(hits, doc_id, start, end))
                )
    return QueryPool(query_id, tuple(found[False]), tuple(found[True]))


def build_pool(
    query_ids: Sequence[QueryId],
    runs: Sequence[PoolRun],
    corpus: Corpus,
    depth: int = DEFAULT_DEPTH,
    read: Mapping[QueryId, Merged] | None = None,
) -> list[QueryPool]:
    """``pool_query`` for each query, in the order given."""
    read = read or {}
    return [pool_query(q, runs, corpus, depth, read.get(q)) for q in query_ids]


def _found_by(
    hits: list[tuple[str, RankedSpan]], doc_id: DocumentId, start: int, end: int
) -> tuple[str, ...]:
    best: dict[str, int] = {}
    for name, hit in hits:
        if hit.doc_id == doc_id and hit.start < end and start < hit.end:
            best[name] = min(best.get(name, hit.rank), hit.rank)
    return tuple(
        f"{name} #{rank}" for name, rank in sorted(best.items(), key=lambda item: (item[1], item[0]))
    )


def pooled_size(pools: Sequence[QueryPool]) -> tuple[int, int, int]:
    """(passages, characters pooled, characters new) over ``pools``."""
    return (
        sum(len(p.passages) for p in pools),
        sum(p.pooled_chars for p in pools),
        sum(p.new_chars for p in pools),
    )
