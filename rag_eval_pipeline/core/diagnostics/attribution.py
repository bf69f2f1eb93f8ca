"""Which stage lost each reference character the final top-k missed, for one question.

Every reference character (G, merged: none counts twice) ends in exactly one place, so the counts add
up exactly: |G| = retrieved + sum over the retrieval stages of the characters lost there.

1. Where each chunk holding reference text was lost (``chunk_stage``), from the lists each stage
   returned (``StageLists``); k = top_k, ranks 1-based, best = its best rank in a candidate list:
   - in no candidate list: ``dense_candidates`` (the first in pipeline order when the profile has a
     dense side, a hybrid included), else ``keyword_candidates``;
   - with a reranker, not in its pool (fused rank > rerank_depth): ``fusion``;
   - fused profile, best <= k but fused rank > k: ``fusion`` (fusion pushed it below k);
   - with a reranker, fused rank <= k but not returned: ``rerank``;
   - otherwise (never within the first k of any list): ``top_k``.
2. A missed character held by several chunks was lost where the furthest of them was lost (its last
   chance in the pipeline).
3. Chunking first: no k chunks hold more than best_k reference characters (``coverage.best_cover``),
   so |G| - best_k of the missed characters are chunking's, whatever the retriever did; the other
   best_k - retrieved are the retrieval stages'. Those go to the characters that got furthest (top-k
   cut first, then reranking, fusion, keyword, dense; within dense, those the threshold cut first), the
   rest to chunking; a character no chunk holds is always chunking's. Every count is whole characters.
4. Where answers exist, the retrieved characters are split the same way: held by no cited chunk
   (``not_cited``), else by the answer's verdict (``answer_wrong``, ``answer_correct``,
   ``answer_unjudged``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal, cast

from ..retrieval.stages import StageLists
from ..settings.configs import RetrievalProfile
from ..spans import (
    ChunkLike,
    ChunkSpanIndex,
    Interval,
    SpanLike,
    intersection_length,
    merge_intervals,
    total_length,
)
from ..types import ChunkId, DocumentId, PositionAwareChunk
from .coverage import Cover, best_cover
from .stages import ANSWER_STAGES, RETRIEVAL_STAGES, AnswerStage, RetrievalStage, order

SegmentStage = RetrievalStage | AnswerStage | Literal["retrieved"]


@dataclass(frozen=True)
class AnswerOutcome:
    """What the answer did with the retrieved chunks: the ones it cited, and its verdict (None: not
    judged), with the method that judged it."""

    cited: frozenset[ChunkId]
    correct: bool | None
    judged_by: str = ""


@dataclass(frozen=True)
class Segment:
    """A run of reference characters that met the same fate."""

    doc_id: DocumentId
    start: int
    end: int
    stage: SegmentStage
    threshold: bool = False  # dense_candidates only: the similarity threshold removed its chunks


@dataclass(frozen=True)
class ChunkTrace:
    """One chunk's way through the stages for one question: 1-based ranks and scores, None where a
    stage did not have it. ``dense_rank`` is the rank in the dense search, before the threshold."""

    chunk_id: ChunkId
    doc_id: DocumentId
    start: int
    end: int
    reference_chars: int
    dense_rank: int | None = None
    dense_score: float | None = None
    below_threshold: bool = False
    keyword_rank: int | None = None
    keyword_score: float | None = None
    fused_rank: int | None = None
    fused_score: float | None = None
    rerank_rank: int | None = None
    rerank_score: float | None = None
    final_rank: int | None = None
    lost_at: RetrievalStage | None = None  # holds reference text and was not returned


@dataclass(frozen=True)
class Attribution:
    reference_chars: int
    retrieved_chars: int
    lost: Mapping[RetrievalStage, int]  # every retrieval stage, 0 included
    threshold_chars: int  # the part of lost["dense_candidates"] the similarity threshold cut
    best_cover: Cover  # the most reference text any k chunks hold (oracle ranking)
    segments: tuple[Segment, ...]
    chunks: tuple[ChunkTrace, ...]
    answered: Mapping[AnswerStage, int] | None = None  # None: no answer to judge
    answer: AnswerOutcome | None = field(default=None, compare=False)

    @property
    def missed_chars(self) -> int:
        return self.reference_chars - self.retrieved_chars

    @property
    def lost_at(self) -> RetrievalStage | None:
        """The stage that lost the most characters (the earlier on a tie); None when none was lost."""
        if not self.missed_chars:
            return None
        return max(RETRIEVAL_STAGES, key=lambda s: (self.lost[s], -order(s)))


class _Positions:
    """Each chunk's (rank, score) in every list of one question."""

    def __init__(self, stages: StageLists) -> None:
        kept = stages.dense or ()
        self.dense = {h.chunk_id: (r, h.score) for r, h in enumerate(kept, start=1)}
        self.below = {
            h.chunk_id: (len(kept) + r, h.score) for r, h in enumerate(stages.dense_below_threshold, start=1)
        }
        self.keyword = {h.chunk_id: (r, h.score) for r, h in enumerate(stages.keyword or (), start=1)}
        self.fused = {h.chunk.chunk_id: (r, h.score) for r, h in enumerate(stages.fused, start=1)}
        self.reranked = {
            h.chunk.chunk_id: (r, s)
            for r, (h, s) in enumerate(zip(stages.reranked or (), stages.rerank_scores, strict=True), start=1)
        }
        self.final = {h.chunk_id: h.rank for h in stages.final}
        self.has_dense = stages.dense is not None
        self.reranks = stages.reranked is not None


def chunk_stage(chunk_id: ChunkId, positions: _Positions, profile: RetrievalProfile) -> RetrievalStage:
    """Where a chunk the run did not return was lost (the rules of the module's step 1)."""
    k = profile.top_k
    ranks = [p[0] for p in (positions.dense.get(chunk_id), positions.keyword.get(chunk_id)) if p]
    if not ranks:
        return "dense_candidates" if positions.has_dense else "keyword_candidates"
    fused_rank = positions.fused[chunk_id][0]
    if positions.reranks and chunk_id not in positions.reranked:
        return "fusion"
    if profile.is_fused and min(ranks) <= k < fused_rank:
        return "fusion"
    if positions.reranks and fused_rank <= k:
        return "rerank"
    return "top_k"


@dataclass(frozen=True)
class _Atom:
    """A piece of the reference between two chunk boundaries: every chunk holds all of it or none."""

    doc_id: DocumentId
    start: int
    end: int
    holders: tuple[ChunkId, ...]  # chunks of the chunk set holding it
    returned: tuple[ChunkId, ...]  # returned chunks holding it

    @property
    def size(self) -> int:
        return self.end - self.start


def attribute(
    reference: Sequence[SpanLike],
    chunk_index: ChunkSpanIndex[PositionAwareChunk],
    stages: StageLists,
    profile: RetrievalProfile,
    answer: AnswerOutcome | None = None,
) -> Attribution:
    """The question's attribution (module docstring); ``chunk_index`` is the whole chunk set the
    profile searched, ``stages`` what each stage returned for the question."""
    gt = merge_intervals(reference)
    size = total_length(gt)
    if size == 0:
        raise ValueError("a question needs at least one non-empty reference span to be diagnosed")
    relevant = chunk_index.overlapping(reference)
    positions = _Positions(stages)
    fate = {
        c.chunk_id: chunk_stage(c.chunk_id, positions, profile)
        for c in relevant
        if c.chunk_id not in positions.final
    }
    atoms = _atoms(gt, relevant, stages.final)
    retrieved = sum(a.size for a in atoms if a.returned)
    cover = best_cover(gt, relevant, profile.top_k)
    if cover.characters < retrieved:  # k returned chunks cannot hold more than the best k chunks
        raise AssertionError(f"{stages.question_id}: best cover {cover.characters} < retrieved {retrieved}")
    lost = {stage: 0 for stage in RETRIEVAL_STAGES}
    threshold_chars = 0
    segments: list[Segment] = []
    missed = [a for a in atoms if not a.returned]
    budget = cover.characters - retrieved  # what the retrieval stages lost; the rest is chunking's

    def atom_stage(atom: _Atom) -> tuple[RetrievalStage, bool]:
        if not atom.holders:
            return "chunking", False
        stage = max((fate[h] for h in atom.holders), key=order)
        cut = stage == "dense_candidates" and any(h in positions.below for h in atom.holders)
        return stage, cut

    staged = [(a, *atom_stage(a)) for a in missed]
    staged.sort(key=lambda t: (t[1] == "chunking", -order(t[1]), not t[2], t[0].doc_id, t[0].start))
    for atom, stage, cut in staged:
        taken = min(budget, atom.size) if stage != "chunking" else 0
        budget -= taken
        if taken:
            lost[stage] += taken
            threshold_chars += taken if cut else 0
            segments.append(Segment(atom.doc_id, atom.start, atom.start + taken, stage, cut))
        if taken < atom.size:
            lost["chunking"] += atom.size - taken
            segments.append(Segment(atom.doc_id, atom.start + taken, atom.end, "chunking"))
    answered: dict[AnswerStage, int] | None = None
    if answer is not None:
        answered = {stage: 0 for stage in ANSWER_STAGES}
    for atom in (a for a in atoms if a.returned):
        fate_of_text = _answer_stage(atom, answer)
        segments.append(Segment(atom.doc_id, atom.start, atom.end, fate_of_text))
        if answered is not None:
            answered[cast(AnswerStage, fate_of_text)] += atom.size
    assert sum(lost.values()) + retrieved == size, "the attribution must partition the reference"
    return Attribution(
        size,
        retrieved,
        lost,
        threshold_chars,
        cover,
        _merged(segments),
        _traces(gt, relevant, stages, positions, fate, profile.top_k),
        answered,
        answer,
    )


def _answer_stage(atom: _Atom, answer: AnswerOutcome | None) -> SegmentStage:
    if answer is None:
        return "retrieved"
    if not any(c in answer.cited for c in atom.returned):
        return "not_cited"
    if answer.correct is None:
        return "answer_unjudged"
    return "answer_correct" if answer.correct else "answer_wrong"


def _atoms(
    gt: Mapping[DocumentId, list[Interval]],
    relevant: Sequence[PositionAwareChunk],
    returned: Iterable[ChunkLike],
) -> list[_Atom]:
    """The reference cut at every boundary of a relevant or returned chunk."""
    by_doc: dict[DocumentId, list[tuple[int, int, ChunkId]]] = {}
    for c in relevant:
        by_doc.setdefault(c.doc_id, []).append((c.start, c.end, c.chunk_id))
    returned_by_doc: dict[DocumentId, list[tuple[int, int, ChunkId]]] = {}
    for r in returned:
        returned_by_doc.setdefault(r.doc_id, []).append((r.start, r.end, r.chunk_id))
    atoms: list[_Atom] = []
    for doc_id, intervals in gt.items():
        holders = by_doc.get(doc_id, [])
        got = returned_by_doc.get(doc_id, [])
        cuts = sorted({p for s, e, _ in (*holders, *got) for p in (s, e)})
        for gs, ge in intervals:
            points = [gs, *(p for p in cuts if gs < p < ge), ge]
            for a, b in pairwise(points):
                atoms.append(
                    _Atom(
                        doc_id,
                        a,
                        b,
                        tuple(cid for s, e, cid in holders if s <= a and b <= e),
                        tuple(cid for s, e, cid in got if s <= a and b <= e),
                    )
                )
    return atoms


def _merged(segments: list[Segment]) -> tuple[Segment, ...]:
    """Adjacent segments of the same fate joined, by document and position."""
    out: list[Segment] = []
    for s in sorted(segments, key=lambda s: (s.doc_id, s.start)):
        last = out[-1] if out else None
        joins = last is not None and (last.doc_id, last.end, last.stage, last.threshold) == (
            s.doc_id,
            s.start,
            s.stage,
            s.threshold,
        )
        if last is not None and joins:
            out[-1] = Segment(s.doc_id, last.start, s.end, s.stage, s.threshold)
        else:
            out.append(s)
    return tuple(out)


def _traces(
    gt: Mapping[DocumentId, list[Interval]],
    relevant: Sequence[PositionAwareChunk],
    stages: StageLists,
    positions: _Positions,
    fate: Mapping[ChunkId, RetrievalStage],
    k: int,
) -> tuple[ChunkTrace, ...]:
    """Every chunk holding reference text, and the first k of each stage's list: what `rag-eval
    explain` shows, ordered by document and position."""
    shown: dict[ChunkId, ChunkLike] = {c.chunk_id: c for c in relevant}
    lists: list[Sequence[ChunkLike]] = [
        (stages.dense or ())[:k],
        (stages.keyword or ())[:k],
        [h.chunk for h in stages.fused[:k]],
        [h.chunk for h in (stages.reranked or ())[:k]],
        stages.final,
    ]
    for listed in lists:
        for chunk in listed:
            shown.setdefault(chunk.chunk_id, chunk)
    traces = []
    for cid, chunk in shown.items():
        dense = positions.dense.get(cid) or positions.below.get(cid)
        keyword = positions.keyword.get(cid)
        fused = positions.fused.get(cid)
        reranked = positions.reranked.get(cid)
        traces.append(
            ChunkTrace(
                cid,
                chunk.doc_id,
                chunk.start,
                chunk.end,
                intersection_length(merge_intervals([chunk]), gt),
                dense[0] if dense else None,
                dense[1] if dense else None,
                cid in positions.below,
                keyword[0] if keyword else None,
                keyword[1] if keyword else None,
                fused[0] if fused else None,
                fused[1] if fused else None,
                reranked[0] if reranked else None,
                reranked[1] if reranked else None,
                positions.final.get(cid),
                fate.get(cid),
            )
        )
    return tuple(sorted(traces, key=lambda t: (t.doc_id, t.start, t.end, t.chunk_id)))
