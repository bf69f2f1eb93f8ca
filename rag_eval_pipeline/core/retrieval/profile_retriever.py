"""Runs one retrieval profile as a user's application would: rewrite the question, search the dense and
keyword sides, fuse by weighted RRF, rerank, keep top_k. Deterministic: at every stage ties go in document
order (core/retrieval/hit_order.py). An optional observer receives what each stage returned
(``stages.StageLists``), for the diagnostics' replays.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ..embedding.cache import EmbeddingCounts
from ..errors import ConfigError
from ..progress import Progress, no_progress
from ..settings.configs import RetrievalProfile, Retriever
from ..types import FoundBy, QueryTrace, QuestionId, RetrievedChunk
from ..vector_store.base import ScoredChunk
from .base import Query, RetrievalRun
from .fusion import FusedHit, RankedList, weighted_rrf
from .hit_order import best_first
from .indexes import ChunkIndexes, DenseIndex
from .keyword import KeywordSearch
from .rerank import Reranker
from .rewrite import QueryRewriter, not_rewritten
from .stages import StageLists, StageObserver

# progress is reported every this many queries (a cross-encoder takes about a second a query: more often)
PROGRESS_EVERY = 64
PROGRESS_EVERY_RERANKED = 8


@dataclass(frozen=True)
class _DenseResult:
    hits: list[ScoredChunk]  # above the similarity threshold
    below: list[ScoredChunk]  # the candidates the similarity threshold removed
    seconds: float  # this query's search alone

    @property
    def below_threshold(self) -> int:
        return len(self.below)


@dataclass(frozen=True)
class _Ranked:
    """A question's ranking: the top_k returned, and the lists before it (for an observer)."""

    final: list[RetrievedChunk]
    fused: list[FusedHit]
    reranked: list[FusedHit] | None
    rerank_scores: list[float]


class ProfileRetriever:
    def __init__(
        self,
        profile: RetrievalProfile,
        *,
        dense: DenseIndex | None = None,
        keyword: KeywordSearch | None = None,
        reranker: Reranker | None = None,
        rewriter: QueryRewriter | None = None,
        observer: StageObserver | None = None,
        candidates_only: bool = False,
    ) -> None:
        where = f"retrieval profile {profile.name!r}"
        if "knn" in profile.retrievers and dense is None:
            raise ConfigError(f"{where} has vector_weight > 0 but no dense index was given")
        if "bm25" in profile.retrievers and keyword is None:
            raise ConfigError(f"{where} has keyword_weight > 0 but no keyword index was given")
        if profile.reranker is not None and reranker is None:
            raise ConfigError(f"{where} reranks with {profile.reranker} but no reranker was given")
        if profile.query_rewrite_enabled and rewriter is None:
            raise ConfigError(f"{where} rewrites queries but no query rewriter (LLM) was given")
        self.profile = profile
        self.dense = dense
        self.keyword = keyword
        self.reranker = reranker if profile.reranker is not None else None
        self.rewriter = rewriter if profile.query_rewrite_enabled else None
        self.observer = observer
        # an observer that reads only the candidate lists (the diagnostics' deep replay): no top_k is
        # built, so ``final`` and the run's hits are empty
        self.candidates_only = candidates_only
        self._seconds: dict[str, float] = {}

    @contextmanager
    def _timed(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self._seconds[stage] = self._seconds.get(stage, 0.0) + time.perf_counter() - started

    def run(self, queries: Sequence[Query], progress: Progress = no_progress) -> RetrievalRun:
        """Every query's top_k, one query at a time after the shared steps (rewriting, embedding the
        queries), so each question's search latency is its own (``QueryTrace.search_ms``)."""
        self._seconds = {}
        embedded_before = self._embedding_counts()
        originals = [q.text for q in queries]
        with self._timed("rewrite"):
            rewritten = (
                self.rewriter.rewrite(originals, progress)
                if self.rewriter is not None
                else not_rewritten(originals)
            )
        texts = [r.text for r in rewritten]
        # the dense side first, for all queries, while the collection is open (other processes wait for
        # it): a reranker's seconds a query must not hold it
        dense = self._dense(texts)
        hits: dict[QuestionId, list[RetrievedChunk]] = {}
        traces: dict[QuestionId, QueryTrace] = {}
        batch = PROGRESS_EVERY_RERANKED if self.reranker is not None else PROGRESS_EVERY
        stage = f"retrieval ({self.profile.name})"
        progress(stage, 0, len(queries))
        for i, query in enumerate(queries):
            started = time.perf_counter()
            keyword_hits = self._keyword(texts[i])
            lists = [RankedList("knn", self.profile.vector_weight, dense[i].hits)] if dense else []
            if keyword_hits is not None:
                lists.append(RankedList("bm25", self.profile.keyword_weight, keyword_hits))
            ranked = self._rank(query, lists)
            hits[query.question_id] = ranked.final
            search_seconds = time.perf_counter() - started + (dense[i].seconds if dense else 0.0)
            if self.observer is not None:
                self.observer(
                    StageLists(
                        query.question_id,
                        texts[i],
                        tuple(dense[i].hits) if dense else None,
                        tuple(dense[i].below) if dense else (),
                        tuple(keyword_hits) if keyword_hits is not None else None,
                        tuple(ranked.fused),
                        tuple(ranked.reranked) if ranked.reranked is not None else None,
                        tuple(ranked.rerank_scores),
                        tuple(ranked.final),
                    )
                )
            traces[query.question_id] = QueryTrace(
                query.question_id,
                texts[i],
                rewritten[i].status,
                rewritten[i].error,
                knn_candidates=len(dense[i].hits) + dense[i].below_threshold if dense else 0,
                knn_below_threshold=dense[i].below_threshold if dense else 0,
                bm25_candidates=len(keyword_hits) if keyword_hits is not None else 0,
                search_ms=round(search_seconds * 1000, 3),
                rewrite_prompt_tokens=rewritten[i].prompt_tokens,
                rewrite_completion_tokens=rewritten[i].completion_tokens,
            )
            if (i + 1) % batch == 0 or i + 1 == len(queries):
                progress(stage, i + 1, len(queries))
        return RetrievalRun(
            hits,
            traces,
            dict(self._seconds),
            self._embedding_counts().since(embedded_before),
            self.reranker.model_id if self.reranker is not None else "",
            self.rewriter.model_id if self.rewriter is not None else "",
        )

    def _embedding_counts(self) -> EmbeddingCounts:
        return EmbeddingCounts.of(self.dense.embedder) if self.dense is not None else EmbeddingCounts()

    def _dense(self, texts: list[str]) -> list[_DenseResult]:
        """Each query's dense candidates above the threshold, how many the threshold removed, and the
        seconds its search took alone (the queries are embedded together: that is not search time)."""
        if self.dense is None or "knn" not in self.profile.retrievers:
            return []
        with self._timed("embed"):
            vectors = self.dense.embedder.embed(texts)
        threshold = self.profile.similarity_threshold
        found: list[_DenseResult] = []
        with self._timed("knn"), self.dense.store.session(self.dense.collection):
            for i in range(len(texts)):
                started = time.perf_counter()
                (candidates,) = self.dense.store.search(
                    self.dense.collection, vectors[i : i + 1], self.profile.candidate_depth
                )
                kept = candidates if threshold is None else [h for h in candidates if h.score >= threshold]
                below = [] if threshold is None else [h for h in candidates if h.score < threshold]
                found.append(_DenseResult(kept, below, time.perf_counter() - started))
        return found

    def _keyword(self, text: str) -> list[ScoredChunk] | None:
        if self.keyword is None or "bm25" not in self.profile.retrievers:
            return None
        with self._timed("bm25"):
            (found,) = self.keyword.search([text], self.profile.candidate_depth)
        return found

    def _rank(self, query: Query, lists: list[RankedList]) -> _Ranked:
        is_fused = self.profile.is_fused  # a property that builds a tuple: read once, not once a hit
        with self._timed("fusion"):
            if is_fused:
                fused = weighted_rrf(lists, self.profile.rrf_k)
            else:
                (only,) = lists
                fused = [
                    FusedHit(h, h.score, {only.retriever: r}, {only.retriever: h.score})
                    for r, h in enumerate(only.hits, start=1)
                ]
        rerank_scores: dict[int, float] = {}
        reranked: list[FusedHit] | None = None
        if self.reranker is not None:
            with self._timed("rerank"):
                pool = fused[: self.profile.rerank_depth]
                # The reranker judges the user's question, not the rewritten search query.
                values = self.reranker.score(query.text, [h.chunk.text for h in pool])
                order = best_first(range(len(pool)), lambda j: values[j], lambda j: pool[j].chunk)
                reranked = [pool[j] for j in order]
                rerank_scores = {pos: float(values[j]) for pos, j in enumerate(order)}
        ranked = reranked if reranked is not None else fused
        final = [
            _retrieved(query.question_id, rank, hit, is_fused, rerank_scores.get(rank - 1))
            for rank, hit in enumerate(ranked[: 0 if self.candidates_only else self.profile.top_k], start=1)
        ]
        return _Ranked(final, fused, reranked, [rerank_scores[pos] for pos in range(len(rerank_scores))])


def retrieve(
    profile: RetrievalProfile,
    indexes: ChunkIndexes,
    queries: Sequence[Query],
    *,
    reranker: Reranker | None = None,
    rewriter: QueryRewriter | None = None,
    progress: Progress = no_progress,
    observer: StageObserver | None = None,
    candidates_only: bool = False,
) -> RetrievalRun:
    """Step 3 of an evaluation (the notebook API and the ``retrieval_results`` asset both call it): the
    profile's top_k per query from the chunk set's indexes, with traces, timings and what ran;
    ``observer`` receives each question's ``StageLists`` (``candidates_only``: without the top_k)."""
    retriever = ProfileRetriever(
        profile,
        dense=indexes.dense,
        keyword=indexes.keyword,
        reranker=reranker,
        rewriter=rewriter,
        observer=observer,
        candidates_only=candidates_only,
    )
    return retriever.run(queries, progress)


def _retrieved(
    question_id: QuestionId, rank: int, hit: FusedHit, fused: bool, rerank_score: float | None
) -> RetrievedChunk:
    c = hit.chunk
    return RetrievedChunk(
        question_id,
        rank,
        c.chunk_id,
        c.doc_id,
        c.start,
        c.end,
        rerank_score if rerank_score is not None else hit.score,
        c.text,
        found_by=_found_by(hit.ranks.keys()),
        knn_rank=hit.ranks.get("knn"),
        knn_score=hit.scores.get("knn"),
        bm25_rank=hit.ranks.get("bm25"),
        bm25_score=hit.scores.get("bm25"),
        fused_score=hit.score if fused else None,
        rerank_score=rerank_score,
    )


def _found_by(retrievers: Collection[Retriever]) -> FoundBy:
    names = set(retrievers)
    if names == {"knn", "bm25"}:
        return "both"
    return "bm25" if names == {"bm25"} else "knn"
