"""What `rag-eval annotate --holes` offers: exactly the pooled text the flagged setups retrieved and nobody
read, worst setup first, each query with the reason it is offered.

The holes (judged_at_k.py's ``holes``: the setups whose top k is more than the threshold unjudged,
each with the passages of its top k nobody read) say *what* is missing; the pool says what the page
can show. Per query the page shows the pool's unjudged pieces found by a flagged setup
(``unjudged_passages(..., found_by=...)``) cut to the holes' own ranges: a pooled passage merges the
hits of every run, and only the characters in a flagged setup's top k raise its judged@k. What nobody
read is the same for every annotator, so the focus is computed once when the page starts; a query the
annotator judges there is read, and a restart no longer offers it.

Order: the setups by judged@k, lowest first (ties by name); under each, its queries by the characters
it left unread there, most first (ties in queries.jsonl order); a query comes once, under the worst
setup that left text unread in it. Holes whose text the pool lacks (``Hole.in_pool`` false) are kept
in ``missing``, with the `rag-eval pool build --depth K` that pools it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..corpus.corpus import Corpus
from ..spans import merge_intervals
from .intervals import intersect, size
from .judged_at_k import Hole, unjudged_passages
from .types import Judgement, PooledPassage, QueryId


@dataclass(frozen=True)
class FocusQuery:
    """One query to judge: its pieces nobody read in the flagged setups' top k (pool order), and why."""

    query_id: QueryId
    passages: tuple[PooledPassage, ...]
    reason: str


@dataclass(frozen=True)
class HoleFocus:
    """The flagged setups (worst first), the queries to judge for them in order, and the holes whose
    unread text is (partly) not in the pool."""

    holes: tuple[Hole, ...]
    queries: tuple[FocusQuery, ...]
    missing: tuple[Hole, ...]

    @property
    def passages(self) -> list[PooledPassage]:
        return [p for q in self.queries for p in q.passages]

    def describe(self) -> str:
        """The page's headline: which setups, and why their passages come first."""
        setups = "; ".join(
            f"{h.judged.setup} (judged@{h.judged.k} {h.judged.judged_share:.2f})" for h in self.holes
        )
        return f"Only the passages that flagged setups retrieved and nobody read, worst setup first: {setups}"

    def pool_advice(self) -> str | None:
        """The command that pools the missing text (None: the pool holds all of it)."""
        if not self.missing:
            return None
        depth = max(max(h.judged.k for h in self.missing), 1)
        return f"rag-eval pool build --depth {depth}"


def reason(hole: Hole) -> str:
    judged = hole.judged
    return f"passages {judged.setup} retrieved that nobody read: judged@{judged.k} {judged.judged_share:.2f}"


def worst_first(holes: Iterable[Hole]) -> list[Hole]:
    return sorted(holes, key=lambda h: (h.judged.judged_share, h.judged.setup))


def hole_focus(
    holes: Sequence[Hole],
    pool: Sequence[PooledPassage],
    judgements: Iterable[Judgement],
    corpus: Corpus,
    query_order: Sequence[QueryId],
) -> HoleFocus:
    """The pooled text of ``holes`` nobody read, per query, in the order that fixes the worst setup
    first (``query_order``: queries.jsonl's, for ties)."""
    ordered = worst_first(holes)
    rank = {q: i for i, q in enumerate(query_order)}
    unread = unjudged_passages(pool, judgements, corpus, found_by={h.judged.setup for h in ordered})
    hole_ranges = {
        q: merge_intervals(p.span for h in ordered for p in h.passages if p.query_id == q)
        for q in {p.query_id for h in ordered for p in h.passages}
    }
    by_query: dict[QueryId, list[PooledPassage]] = {}
    for passage in unread:
        wanted = intersect(merge_intervals([passage.span]), hole_ranges.get(passage.query_id, {}))
        text = corpus[passage.span.doc_id].text
        for doc_id, intervals in wanted.items():
            for start, end in intervals:
                span = replace(passage.span, doc_id=doc_id, start=start, end=end, text=text[start:end])
                by_query.setdefault(passage.query_id, []).append(replace(passage, span=span))
    queries: list[FocusQuery] = []
    placed: set[QueryId] = set()
    for hole in ordered:
        own = {q: merge_intervals(p.span for p in hole.passages if p.query_id == q) for q in by_query}
        shown = {q: size(intersect(own[q], merge_intervals(p.span for p in by_query[q]))) for q in by_query}
        for query_id in sorted(
            (q for q in by_query if q not in placed and shown[q]),
            key=lambda q: (-shown[q], rank.get(q, len(rank)), q),
        ):
            queries.append(FocusQuery(query_id, tuple(by_query[query_id]), reason(hole)))
            placed.add(query_id)
    missing = tuple(h for h in ordered if not h.in_pool)
    return HoleFocus(tuple(ordered), tuple(queries), missing)
