"""Holes in the judgements: how much of what each setup retrieves no judge has read (judged@k, as TREC
reports it), which setups it makes unreliable, and the passages to judge next.

judged@k counts *characters*, not chunks. Judgements are character ranges, and a chunk of a new chunk
config often straddles judged and unjudged text: counted by chunks it would be judged or not by some
threshold, and two configs with different chunk sizes would not be comparable. By characters, a setup's
top k is merged per document (no character counted twice, as the span metrics do) and the share of it
that lies outside every usable judgement's ``read`` is its unjudged share. The share is computed per
query and averaged over the judged queries (those with at least one usable judgement: a query nobody
judged is missing, not holed, and ``rag-eval judgements status`` counts those apart); a query for which
the setup retrieved nothing is left out of its mean.

Unjudged text is scored as not relevant by the metrics, so a setup with much of it is under-rated when
it finds answers nobody looked at: above the threshold (``UNJUDGED_THRESHOLD``, 20 %) it is flagged, with
what to do.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..corpus.corpus import Corpus
from ..questions.reanchor import reanchor_span, span_matches
from ..spans import Merged, merge_intervals
from ..types import CharacterSpan
from .intervals import size, subtract
from .judge_views import judge_views, read_by_query
from .pool import PoolRun, pool_query
from .reanchor import anchor_judgements
from .types import Judgement, JudgeName, PooledPassage, QueryId

UNJUDGED_THRESHOLD = 0.2


@dataclass(frozen=True)
class JudgedAtK:
    """One setup at one k over the judged queries."""

    setup: str
    k: int
    n_queries: int  # judged queries for which the setup retrieved something
    retrieved_chars: int  # its top k, merged per query, summed over the queries
    unjudged_chars: int
    unjudged_share: float  # the mean over the queries of each query's unjudged share (0 with none)

    @property
    def judged_share(self) -> float:
        """judged@k: the share of the top k that some judge read."""
        return 1.0 - self.unjudged_share

    def flagged(self, threshold: float = UNJUDGED_THRESHOLD) -> bool:
        return self.unjudged_share > threshold


def judged_at_k(
    runs: Sequence[PoolRun],
    read: Mapping[QueryId, Merged],
    query_ids: Iterable[QueryId],
    ks: Sequence[int],
) -> list[JudgedAtK]:
    """judged@k of every run at every k (runs in the order given, k ascending) over ``query_ids``."""
    queries = list(query_ids)
    found = []
    for run in runs:
        for k in sorted(set(ks)):
            shares: list[float] = []
            retrieved_chars = unjudged_chars = 0
            for query_id in queries:
                retrieved = merge_intervals(run.top(query_id, k))
                total = size(retrieved)
                if not total:
                    continue
                unjudged = size(subtract(retrieved, read.get(query_id, {})))
                shares.append(unjudged / total)
                retrieved_chars += total
                unjudged_chars += unjudged
            share = sum(shares) / len(shares) if shares else 0.0
            found.append(JudgedAtK(run.name, k, len(shares), retrieved_chars, unjudged_chars, share))
    return found


@dataclass(frozen=True)
class Hole:
    """A flagged setup: its judged@k, the passages of its top k nobody read, and whether the stored pool
    already holds them (then annotating is all that is left)."""

    judged: JudgedAtK
    passages: tuple[PooledPassage, ...]
    in_pool: bool

    def advice(self) -> str:
        chars = sum(len(p.span) for p in self.passages)
        what = (
            f"{len(self.passages)} passages ({chars:,} characters) of its top {self.judged.k} were never read"
        )
        if self.in_pool:
            return f"{what}: judge them, `rag-eval annotate --holes` offers exactly those"
        return (
            f"{what} and are not in the pool: `rag-eval pool build --depth {max(self.judged.k, 1)}` "
            f"(or deeper), then judge them with `rag-eval annotate --holes`"
        )


def holes(
    runs: Sequence[PoolRun],
    corpus: Corpus,
    read: Mapping[QueryId, Merged],
    query_ids: Sequence[QueryId],
    evaluated_k: Mapping[str, int],
    pool: Sequence[PooledPassage],
    threshold: float = UNJUDGED_THRESHOLD,
) -> list[Hole]:
    """The runs whose unjudged share at the k they are evaluated at (``evaluated_k``: run name -> the
    profile's top_k) is above ``threshold``, each with its unjudged passages."""
    spans_by_query: dict[QueryId, list[CharacterSpan]] = {}
    for passage in pool:
        spans_by_query.setdefault(passage.query_id, []).append(passage.span)
    pooled = {q: merge_intervals(spans) for q, spans in spans_by_query.items()}
    found = []
    for run in runs:
        k = evaluated_k.get(run.name)
        if k is None:
            continue
        (judged,) = judged_at_k([run], read, query_ids, [k])
        if not judged.flagged(threshold):
            continue
        passages = [p for q in query_ids for p in pool_query(q, [run], corpus, k, read.get(q)).new]
        in_pool = all(not subtract(merge_intervals([p.span]), pooled.get(p.query_id, {})) for p in passages)
        found.append(Hole(judged, tuple(passages), in_pool))
    return found


def unjudged_passages(
    pool: Sequence[PooledPassage],
    judgements: Iterable[Judgement],
    corpus: Corpus,
    *,
    judge: JudgeName | None = None,
    found_by: Collection[str] | None = None,
) -> list[PooledPassage]:
    """The pooled text still to read, in the pool's order: each passage minus what the usable
    judgements of its query read (re-anchored to the corpus; stale ones read nothing), cut into the
    pieces left. ``judge``: minus only what that judge read (what to show one annotator, e.g. a second
    one judging for agreement). ``found_by``: only passages some of these runs found (the setups
    judged@k flagged). A passage whose document changed since pooling is moved to where its text is
    now, or left out when the text is gone (`rag-eval pool build` pools the new text)."""
    usable = anchor_judgements(judgements, corpus).usable
    if judge is not None:
        usable = tuple(j for j in usable if j.judge == judge)
    read = read_by_query(judge_views(usable))
    out: list[PooledPassage] = []
    for passage in pool:
        if found_by is not None and not any(f.rsplit(" #", 1)[0] in found_by for f in passage.found_by):
            continue
        current = _current(passage, corpus)
        if current is None:
            continue
        left = subtract(merge_intervals([current.span]), read.get(passage.query_id, {}))
        text = corpus[current.span.doc_id].text
        for doc_id, intervals in left.items():
            for start, end in intervals:
                span = replace(current.span, doc_id=doc_id, start=start, end=end, text=text[start:end])
                out.append(replace(current, span=span))
    return out


def _current(passage: PooledPassage, corpus: Corpus) -> PooledPassage | None:
    if span_matches(passage.span, corpus):
        return passage
    if passage.span.doc_id not in corpus:
        return None
    document = corpus[passage.span.doc_id]
    moved = reanchor_span(passage.span, document.text)
    return None if moved is None else replace(passage, span=moved, document_sha256=document.sha256)
