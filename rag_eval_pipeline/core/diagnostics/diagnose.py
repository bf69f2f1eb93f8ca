"""The diagnostics of one chunk set x profile: the step the ``retrieval_diagnostics`` asset (and a
notebook) calls after retrieval, from the same indexes and the embedding cache.

1. replay the profile, keeping every stage's list (``replay.py``), and check it returns what the
   evaluation recorded (the oracle k's deeper replay runs first, and serves its searches:
   ``searched_once.py``);
2. attribute each question's missed reference characters to stages (``attribution.py``);
3. the oracles (``oracles.py``): oracle ranking from the chunk set, oracle k from a deeper replay,
   oracle chunking from a replay with the reference spans as chunks (``oracle_chunking.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from ..corpus.corpus import Corpus
from ..embedding.cache import EmbeddingCounts
from ..metrics.span_metrics import precision_omega
from ..progress import Progress, no_progress
from ..questions.datasets import TokenLevelExample
from ..retrieval.base import Query
from ..retrieval.indexes import ChunkIndexes
from ..retrieval.rerank import Reranker
from ..retrieval.rewrite import QueryRewriter
from ..retrieval.stages import StageLists
from ..settings.configs import RetrievalProfile
from ..spans import ChunkSpanIndex, merge_intervals
from ..types import PositionAwareChunk, QuestionId, RetrievedChunk
from .attribution import AnswerOutcome, Attribution, attribute
from .coverage import best_cover
from .oracle_chunking import reference_chunks, reference_chunks_recall
from .oracles import ORACLE_K_DEPTH, Oracles, oracle_k
from .replay import KnownRewrites, check_replay, replay
from .searched_once import searched_once


@dataclass(frozen=True)
class QuestionDiagnosis:
    example: TokenLevelExample
    searched: str  # the query the retrievers searched (after any rewrite)
    attribution: Attribution
    oracles: Oracles
    precision_omega: float  # how diluted the chunks holding the reference are (1: not at all)

    @property
    def span_recall(self) -> float:
        a = self.attribution
        return a.retrieved_chars / a.reference_chars


@dataclass(frozen=True)
class Diagnosis:
    questions: tuple[QuestionDiagnosis, ...]
    seconds: Mapping[str, float] = field(
        default_factory=dict
    )  # replay, oracle_k, oracle_chunking, attribution
    reference_texts: int = 0  # distinct reference texts oracle chunking scores (one per merged interval)
    reference_embedding: EmbeddingCounts = field(default_factory=EmbeddingCounts)


def diagnose(
    examples: Sequence[TokenLevelExample],
    chunks: Sequence[PositionAwareChunk],
    corpus: Corpus,
    profile: RetrievalProfile,
    indexes: ChunkIndexes,
    *,
    reranker: Reranker | None = None,
    rewriter: QueryRewriter | None = None,
    answers: Mapping[QuestionId, AnswerOutcome] | None = None,
    recorded: Mapping[QuestionId, Sequence[RetrievedChunk]] | None = None,
    progress: Progress = no_progress,
) -> Diagnosis:
    """Every question's attribution and oracles. ``recorded``: the evaluation's top-k per question,
    which the replay must reproduce (``ReplayMismatch`` otherwise). ``answers``: what each answer cited
    and its verdict, for the answer stages (None: retrieval only). ``rewriter`` is called once, by the
    first replay; the others reuse its rewrites."""
    seconds: dict[str, float] = {}
    queries = [Query(e.question_id, e.query) for e in examples]
    with _timed(seconds, "oracle_chunking"):  # embeds the reference texts: before the collection is held
        dense_side = indexes.dense is not None and "knn" in profile.retrievers
        embedder = indexes.dense.embedder if indexes.dense is not None and dense_side else None
        references = reference_chunks(examples, corpus, embedder)
    # three profile runs over one collection: each query searched once (searched_once.py), the
    # collection opened once if at all
    searched = searched_once(indexes)
    with searched.held_open():
        with _timed(seconds, "oracle_k"):  # the deepest first: the others are served from it
            deep = _deep_lists(profile, searched, queries, reranker, rewriter, progress)
        if deep is not None:
            rewriter = KnownRewrites({e.query: deep[e.question_id].query for e in examples})
        with _timed(seconds, "replay"):
            lists = replay(
                profile, searched, queries, reranker=reranker, rewriter=rewriter, progress=progress
            )
        if recorded is not None:
            check_replay(lists, recorded)
        known = KnownRewrites({e.query: lists[e.question_id].query for e in examples})
        if deep is None:  # a reranking profile: its own lists serve the oracle k
            deep = lists
        index = ChunkSpanIndex(chunks)
        with _timed(seconds, "oracle_chunking"):
            replayed = reference_chunks_recall(
                examples,
                index,
                references,
                profile,
                searched,
                reranker=reranker,
                rewriter=known,
                progress=progress,
            )
    diagnosed = []
    with _timed(seconds, "attribution"):
        for e in examples:
            stages = lists[e.question_id]
            answer = answers.get(e.question_id) if answers is not None else None
            if answers is not None and answer is None:
                answer = AnswerOutcome(frozenset(), None, "no answer")
            attribution = attribute(e.relevant_spans, index, stages, profile, answer)
            diagnosed.append(
                QuestionDiagnosis(
                    e,
                    stages.query,
                    attribution,
                    _oracles(e, attribution, stages, deep[e.question_id], replayed[e.question_id], profile),
                    precision_omega(e.relevant_spans, index).precision_omega,
                )
            )
    return Diagnosis(tuple(diagnosed), seconds, references.n_texts, references.embedding)


def _deep_lists(
    profile: RetrievalProfile,
    indexes: ChunkIndexes,
    queries: Sequence[Query],
    reranker: Reranker | None,
    rewriter: QueryRewriter | None,
    progress: Progress,
) -> Mapping[QuestionId, StageLists] | None:
    """Each question's lists for the oracle k: the profile searched as deep as top_k = ORACLE_K_DEPTH
    needs, its candidates only (the oracle reads them, not a top 50); None for a reranking profile,
    whose own lists serve (``oracles.oracle_k``)."""
    if profile.reranker is not None:
        return None
    deeper = replace(profile, top_k=ORACLE_K_DEPTH, rerank_depth=max(profile.rerank_depth, ORACLE_K_DEPTH))
    return replay(
        deeper,
        indexes,
        queries,
        reranker=reranker,
        rewriter=rewriter,
        progress=progress,
        candidates_only=True,
    )


def _oracles(
    example: TokenLevelExample,
    attribution: Attribution,
    stages: StageLists,
    searched: StageLists,
    reference_recall: float,
    profile: RetrievalProfile,
) -> Oracles:
    size = attribution.reference_chars
    gt = merge_intervals(example.relevant_spans)
    candidates = [h.chunk for h in stages.fused]
    k, held = oracle_k(gt, profile, searched)
    recall = attribution.retrieved_chars / size
    return Oracles(
        ranking_recall=attribution.best_cover.characters / size,
        candidates_recall=best_cover(gt, candidates, profile.top_k).characters / size,
        chunking_recall=max(recall, reference_recall),
        reference_chunks_recall=reference_recall,
        k=k,
        k_recall=held / size,
    )


@contextmanager
def _timed(seconds: dict[str, float], part: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[part] = seconds.get(part, 0.0) + time.perf_counter() - started
