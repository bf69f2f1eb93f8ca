"""Agreement between two judges on the queries both judged: Cohen's kappa on binary relevance of the
passages both read, and the character overlap (IoU) of the answering spans they selected.

The items of kappa are passages: each pooled passage of a query, cut to the part both judges read (a
passage only one of them read is no item); for a query with no pooled passage (no pool given, or the
pool rebuilt without it), each stretch of text both read. A passage is
relevant for a judge when it shares a character with the text that judge holds relevant
(core/judging/judge_views.py: a person's selected spans; an LLM judgement's graded range when its
grade is at least RELEVANT_GRADE). Kappa = (p_o - p_e) / (1 - p_e) over the 2x2 table; it is undefined
(None) when both judges put every item in one class (p_e = 1): the observed agreement is reported then.

The span overlap compares *where* the answer is: per query both judged, the intersection over the union
of their merged spans, each cut to the text both read (a span in a passage only one of them was shown
is no disagreement); a query where neither selected anything is left out; the mean over the queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from ..corpus.corpus import Corpus
from ..spans import Merged
from ..types import DocumentId
from .intervals import intersect, overlaps, size, union
from .judge_views import JudgeView, judge_views
from .reanchor import anchor_judgements
from .types import Judgement, JudgeName, PooledPassage, QueryId


@dataclass(frozen=True)
class Table:
    """The 2x2 table of two judges' binary relevance over the same items."""

    both: int = 0  # relevant for a and b
    only_a: int = 0
    only_b: int = 0
    neither: int = 0

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def observed(self) -> float | None:
        """p_o, the share of items on which they agree."""
        return (self.both + self.neither) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa; None without items or when chance agreement is 1 (one class for both)."""
        n = self.n
        if not n:
            return None
        a_yes, b_yes = self.both + self.only_a, self.both + self.only_b
        expected = (a_yes * b_yes + (n - a_yes) * (n - b_yes)) / (n * n)
        if expected == 1.0:
            return None
        observed = (self.both + self.neither) / n
        return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class PairAgreement:
    judge_a: JudgeName
    judge_b: JudgeName
    n_queries: int  # queries both judged
    table: Table  # over the passages both read
    span_iou: float | None  # mean over the queries where either selected a span (None: no such query)
    n_span_queries: int

    @property
    def kappa(self) -> float | None:
        return self.table.kappa

    def describe(self) -> str:
        kappa = "undefined (one class for both)" if self.kappa is None else f"{self.kappa:.2f}"
        if not self.table.n:
            kappa = "no passage both read"
        iou = "no span selected" if self.span_iou is None else f"{self.span_iou:.2f}"
        return (
            f"{self.judge_a} / {self.judge_b}: {self.n_queries} queries both judged, kappa {kappa} over "
            f"{self.table.n} passages both read, span overlap (IoU) {iou} over {self.n_span_queries} queries"
        )


def judgements_agreement(
    judgements: Iterable[Judgement], corpus: Corpus, pool: Sequence[PooledPassage] | None = None
) -> list[PairAgreement]:
    """``agreement`` of the stored judgements as they hold for ``corpus`` now: re-anchored, stale ones
    left out, each judge's judgements of a query layered into one view. What the annotation page,
    `rag-eval judgements status` and `rag-eval judgements llm` show."""
    return agreement(judge_views(anchor_judgements(judgements, corpus).usable), pool)


def agreement(
    views: Mapping[QueryId, Sequence[JudgeView]], pool: Sequence[PooledPassage] | None = None
) -> list[PairAgreement]:
    """Every pair of judges who judged at least one query in common, by names."""
    passages: dict[QueryId, list[PooledPassage]] = {}
    for passage in pool or ():
        passages.setdefault(passage.query_id, []).append(passage)
    judges = sorted({v.judge for vs in views.values() for v in vs})
    found = []
    for a, b in combinations(judges, 2):
        table = Table()
        ious: list[float] = []
        n_queries = 0
        for query_id, query_views in views.items():
            by_judge = {v.judge: v for v in query_views}
            if a not in by_judge or b not in by_judge:
                continue
            n_queries += 1
            va, vb = by_judge[a], by_judge[b]
            both_read = intersect(va.read, vb.read)
            for item in _items(both_read, passages.get(query_id)):
                table = _count(table, _relevant(va, item), _relevant(vb, item))
            spans_a, spans_b = intersect(va.spans, both_read), intersect(vb.spans, both_read)
            whole = size(union(spans_a, spans_b))
            if whole:
                ious.append(size(intersect(spans_a, spans_b)) / whole)
        if n_queries:
            iou = sum(ious) / len(ious) if ious else None
            found.append(PairAgreement(a, b, n_queries, table, iou, len(ious)))
    return found


Item = list[tuple[DocumentId, int, int]]  # the pieces (doc_id, start, end) of one passage both judges read


def _items(both_read: Merged, passages: list[PooledPassage] | None) -> list[Item]:
    """The items of kappa: each passage's part both read (one item even when in several pieces), or
    each stretch both read when the query has no pooled passage."""
    if passages is None:
        return [[(d, s, e)] for d, intervals in both_read.items() for s, e in intervals]
    items = []
    for passage in passages:
        span = passage.span
        parts = [
            (span.doc_id, max(s, span.start), min(e, span.end))
            for s, e in both_read.get(span.doc_id, [])
            if s < span.end and span.start < e
        ]
        if parts:
            items.append(parts)
    return items


def _relevant(view: JudgeView, item: Item) -> bool:
    return any(overlaps(view.relevant, d, s, e) for d, s, e in item)


def _count(table: Table, a: bool, b: bool) -> Table:
    if a and b:
        return Table(table.both + 1, table.only_a, table.only_b, table.neither)
    if a:
        return Table(table.both, table.only_a + 1, table.only_b, table.neither)
    if b:
        return Table(table.both, table.only_a, table.only_b + 1, table.neither)
    return Table(table.both, table.only_a, table.only_b, table.neither + 1)
