"""The user-facing evaluation API, usable from a notebook without Dagster.

    corpus = Corpus.from_folder("./knowledge_base")
    dataset = read_token_level_jsonl("golden.jsonl", corpus)
    result = TokenLevelEvaluation(corpus=corpus, dataset=dataset).run(
        chunker=build_chunker(config), embedder=embedder, vector_store=store, k=5)
    result.metrics["span_recall"].mean

Pass ``profile=RetrievalProfile(...)`` instead of ``k`` for hybrid BM25 + dense retrieval, thresholds,
reranking or query rewriting (``rewriter=``).

One code path: ``run`` is the four steps the Dagster assets call one by one, so a notebook and the
pipeline give the same numbers on the same inputs:

1. cut: ``chunking.base.cut_corpus`` (asset ``chunks``)
2. index: ``retrieval.indexes.build_indexes`` (``chunk_index``; ``open_indexes`` in ``retrieval_results``)
3. retrieve: ``retrieval.profile_retriever.retrieve`` (``retrieval_results``)
4. score: ``token_level_result`` / ``chunk_level_result`` below (``retrieval_metrics``)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..chunking.base import Chunker, ChunkSet, cut_corpus
from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..errors import ConfigError
from ..metrics.aggregate import MetricSummary, summarize_by_group, summarize_table
from ..metrics.chunk_metrics import chunk_metrics
from ..metrics.context_budget import ChunkTokenStarts, context_budget_metrics
from ..metrics.names import (
    CHUNK_METRICS,
    IOU_CHROMA,
    PRECISION_CHROMA,
    PRECISION_OMEGA,
    PRECISION_OMEGA_CHROMA,
    QUERY_COUNT,
    SPAN_IOU,
    SPAN_IOU_COPIES,
    SPAN_PRECISION,
    SPAN_PRECISION_COPIES,
    SPAN_RECALL,
    SPAN_RECALL_COPIES,
    TOKEN_LEVEL_METRICS,
)
from ..metrics.reference_copies import ReferenceCopies, ReferenceDuplication
from ..metrics.span_metrics import ChunkSpanIndex, precision_omega, span_metrics, span_metrics_copies
from ..metrics.traffic import is_weighted, traffic_count, weighted_means
from ..progress import Progress, no_progress
from ..questions.datasets import ChunkLevelDataset, ChunkLevelExample, TokenLevelDataset, TokenLevelExample
from ..retrieval.base import Query, RetrievalRun
from ..retrieval.indexes import build_indexes
from ..retrieval.profile_retriever import retrieve
from ..retrieval.rerank import Reranker, load_reranker
from ..retrieval.rewrite import QueryRewriter
from ..settings.configs import RetrievalProfile
from ..spans import merge_intervals
from ..types import ChunkId, EvaluationType, PositionAwareChunk, ProfileName, QuestionId, RetrievedChunk
from ..vector_store.base import VectorStore


@dataclass(frozen=True)
class QuestionResult:
    question_id: QuestionId
    query: str
    group: str
    retrieved: tuple[RetrievedChunk, ...]
    metrics: Mapping[str, float]
    # token-level only: how much of the question's reference text occurs elsewhere in the corpus too
    duplication: ReferenceDuplication | None = None
    # how often users asked it (metadata "count"; 1 for a question without): its traffic weight
    count: float = 1.0

    def columns(self) -> dict[str, Any]:
        """The question's row: ids, group, every metric, and the duplication counts (token-level)."""
        counts = self.duplication.columns() if self.duplication is not None else {}
        return {
            "question_id": self.question_id,
            "query": self.query,
            "group": self.group,
            **self.metrics,
            **counts,
        }


@dataclass(frozen=True)
class EvaluationResult:
    evaluation_type: EvaluationType
    metrics: Mapping[str, MetricSummary]
    experiment_url: str | None
    raw_results: tuple[QuestionResult, ...]
    by_group: Mapping[str, Mapping[str, MetricSummary]] = field(default_factory=dict)
    # Each metric's mean weighted by the questions' counts (core/metrics/traffic.py), beside ``metrics``;
    # empty when every question's count is 1.
    weighted_means: Mapping[str, float] = field(default_factory=dict)

    @property
    def weighted(self) -> bool:
        """Whether some question's count differs from 1 (the set is weighted by traffic)."""
        return is_weighted(r.count for r in self.raw_results)

    def metric_rows(self) -> list[dict[str, Any]]:
        """One flat row per question: ids, group, every metric (and, token-level, the duplication
        counts: ``reference_copies.DUPLICATION_COLUMNS``); in a weighted set, its ``query_count`` too."""
        if not self.weighted:
            return [r.columns() for r in self.raw_results]
        return [{**r.columns(), QUERY_COUNT: r.count} for r in self.raw_results]

    @property
    def duplication(self) -> ReferenceDuplication | None:
        """The duplication counts summed over the questions (None for a chunk-level evaluation)."""
        counts = [r.duplication for r in self.raw_results if r.duplication is not None]
        return sum(counts, ReferenceDuplication()) if counts else None


class ExperimentSink(Protocol):
    """Logs a finished evaluation somewhere (a LangSmith experiment) and returns its URL, or None when
    it could not: an unreachable experiment tracker must never cost the evaluation."""

    def __call__(self, result: EvaluationResult) -> str | None: ...


def token_level_result(
    examples: Sequence[TokenLevelExample],
    hits: Mapping[QuestionId, Sequence[RetrievedChunk]],
    chunks: Sequence[PositionAwareChunk],
    k: int,
    corpus: Corpus,
    metrics: Sequence[str] | None = None,
) -> EvaluationResult:
    """Step 4 of a token-level evaluation (``run`` and the ``retrieval_metrics`` asset both call it): span
    metrics, their Chroma variants, precision_omega, chunk-level metrics with ground truth derived from
    the spans for this very chunk set, span metrics at context budgets and the context's size in tokens,
    per question, grouped by document group and summarized.
    A question without hits scores 0. Where reference texts occur in the corpus is searched once per
    call (per distinct text), for the copy-aware metrics and the duplication counts; each distinct
    retrieved chunk is tokenized once per call, for the context-budget metrics and ``context_tokens``."""
    names = selected_metrics(TOKEN_LEVEL_METRICS, metrics)
    index = ChunkSpanIndex(chunks)
    copies = ReferenceCopies(corpus)
    tokens = ChunkTokenStarts()
    results = []
    for e in examples:
        found = tuple(hits.get(e.question_id, ()))
        scores = _token_level_scores(e, found, index, k, copies, tokens)
        results.append(
            QuestionResult(
                e.question_id,
                e.query,
                _group(e, corpus),
                found,
                {n: scores[n] for n in names},
                copies.duplication(merge_intervals(e.relevant_spans)),
                traffic_count(e.metadata, e.question_id),
            )
        )
    return _summarized("token-level", tuple(results), names)


def chunk_level_result(
    examples: Sequence[ChunkLevelExample],
    hits: Mapping[QuestionId, Sequence[RetrievedChunk]],
    k: int,
    metrics: Sequence[str] | None = None,
) -> EvaluationResult:
    """Step 4 of a chunk-level evaluation: every question scored against its chunk ids, summarized."""
    names = selected_metrics(CHUNK_METRICS, metrics)
    results = []
    for e in examples:
        found = tuple(hits.get(e.question_id, ()))
        scores = _chunk_scores([h.chunk_id for h in found], e.relevant_chunk_ids, k)
        metric_values = {n: scores[n] for n in names}
        count = traffic_count(e.metadata, e.question_id)
        results.append(QuestionResult(e.question_id, e.query, "", found, metric_values, count=count))
    return _summarized("chunk-level", tuple(results), names)


def _group(example: TokenLevelExample, corpus: Corpus) -> str:
    """The document groups a question draws on, joined by '+' (multi-document questions span groups)."""
    groups = sorted({corpus[s.doc_id].group for s in example.relevant_spans})
    return "+".join(g or "(root)" for g in groups)


def _token_level_scores(
    example: TokenLevelExample,
    hits: Sequence[RetrievedChunk],
    index: ChunkSpanIndex[PositionAwareChunk],
    k: int,
    copies: ReferenceCopies,
    tokens: ChunkTokenStarts,
) -> dict[str, float]:
    spans = span_metrics(example.relevant_spans, hits)
    with_copies = span_metrics_copies(example.relevant_spans, hits, copies)
    omega = precision_omega(example.relevant_spans, index)
    relevant = [c.chunk_id for c in index.overlapping(example.relevant_spans)]
    return {
        SPAN_RECALL: spans.span_recall,
        SPAN_PRECISION: spans.span_precision,
        SPAN_IOU: spans.span_iou,
        PRECISION_CHROMA: spans.precision_chroma,
        IOU_CHROMA: spans.iou_chroma,
        SPAN_RECALL_COPIES: with_copies.span_recall_copies,
        SPAN_PRECISION_COPIES: with_copies.span_precision_copies,
        SPAN_IOU_COPIES: with_copies.span_iou_copies,
        PRECISION_OMEGA: omega.precision_omega,
        PRECISION_OMEGA_CHROMA: omega.precision_omega_chroma,
        **_chunk_scores([h.chunk_id for h in hits], relevant, k),
        **context_budget_metrics(example.relevant_spans, hits, tokens).columns(),
    }


def _chunk_scores(retrieved: Sequence[ChunkId], relevant: Sequence[ChunkId], k: int) -> dict[str, float]:
    if not relevant:  # no chunk of this chunk set overlaps the reference: nothing retrievable is relevant
        return {name: 0.0 for name in CHUNK_METRICS}
    m = chunk_metrics(retrieved, relevant, k)
    return {name: float(getattr(m, name)) for name in CHUNK_METRICS}


def selected_metrics(available: Sequence[str], wanted: Sequence[str] | None) -> list[str]:
    """The metrics asked for (all when None), refusing a name that does not exist."""
    if wanted is None:
        return list(available)
    unknown = [m for m in wanted if m not in available]
    if unknown:
        raise ConfigError(f"unknown metric(s) {', '.join(unknown)}; available: {', '.join(available)}")
    return list(wanted)


def _summarized(
    evaluation_type: EvaluationType, results: tuple[QuestionResult, ...], names: list[str]
) -> EvaluationResult:
    rows: list[dict[str, float | str]] = [{"group": r.group, **r.metrics} for r in results]
    groups = {r.group for r in results}
    counts = [r.count for r in results]
    return EvaluationResult(
        evaluation_type=evaluation_type,
        metrics=summarize_table(rows, names),
        experiment_url=None,
        raw_results=results,
        by_group=summarize_by_group(rows, "group", names) if len(groups) > 1 else {},
        weighted_means=weighted_means(rows, names, counts) if is_weighted(counts) else {},
    )


@dataclass(frozen=True)
class Retrieval:
    """How an evaluation retrieves: a profile, plus the reranker and rewriter objects it needs."""

    profile: RetrievalProfile
    reranker: Reranker | None = None
    rewriter: QueryRewriter | None = None

    @classmethod
    def of(
        cls,
        k: int | None,
        profile: RetrievalProfile | None,
        reranker: Reranker | None,
        rewriter: QueryRewriter | None,
    ) -> Retrieval:
        if profile is None:
            if k is not None and k <= 0:
                raise ConfigError(f"k must be >= 1 (the number of chunks to retrieve per question), got {k}")
            profile = RetrievalProfile(ProfileName("dense"), top_k=5 if k is None else k)
        elif k is not None and k != profile.top_k:
            raise ConfigError(
                f"k={k} contradicts top_k={profile.top_k} of profile {profile.name!r}: pass one of them"
            )
        if reranker is not None and profile.reranker is None:
            profile = replace(profile, reranker=reranker.model_id)
        if rewriter is not None and not profile.query_rewrite_enabled:
            raise ConfigError(
                f"a query rewriter was given but profile {profile.name!r} has query_rewrite_enabled false"
            )
        return cls(profile, reranker, rewriter)

    def loaded_reranker(self) -> Reranker | None:
        """The reranker given, else the one the profile names (a local cross-encoder folder)."""
        if self.reranker is None and self.profile.reranker is not None:
            return load_reranker(self.profile.reranker)
        return self.reranker


class _Evaluation:
    evaluation_type: EvaluationType

    def __init__(self, corpus: Corpus, progress: Progress = no_progress) -> None:
        self.corpus = corpus
        self.progress = progress

    def _retrieve(
        self,
        queries: Sequence[Query],
        chunker: Chunker,
        embedder: Embedder,
        vector_store: VectorStore,
        retrieval: Retrieval,
        collection: str | None,
    ) -> tuple[ChunkSet, RetrievalRun]:
        """Steps 1 to 3: cut, index (only the sides the profile searches), retrieve."""
        chunk_set = cut_corpus(chunker, self.corpus)
        retrieval.profile.check_fits(len(chunk_set.chunks), chunk_set.name)
        indexes = build_indexes(
            chunk_set,
            embedder,
            vector_store,
            collection=collection,
            retrievers=retrieval.profile.retrievers,
            progress=self.progress,
        )
        run = retrieve(
            retrieval.profile,
            indexes,
            queries,
            reranker=retrieval.loaded_reranker(),
            rewriter=retrieval.rewriter,
            progress=self.progress,
        )
        return chunk_set, run


class TokenLevelEvaluation(_Evaluation):
    """Judges any chunker against character spans, the same truth for every chunking strategy."""

    evaluation_type: EvaluationType = "token-level"

    def __init__(self, corpus: Corpus, dataset: TokenLevelDataset, progress: Progress = no_progress) -> None:
        super().__init__(corpus, progress)
        self.dataset = dataset

    def run(
        self,
        chunker: Chunker,
        embedder: Embedder,
        vector_store: VectorStore,
        k: int | None = None,
        metrics: Sequence[str] | None = None,
        collection: str | None = None,
        experiment: ExperimentSink | None = None,
        profile: RetrievalProfile | None = None,
        reranker: Reranker | None = None,
        rewriter: QueryRewriter | None = None,
    ) -> EvaluationResult:
        retrieval = Retrieval.of(k, profile, reranker, rewriter)
        names = selected_metrics(TOKEN_LEVEL_METRICS, metrics)  # a bad name fails before any work
        queries = [Query(e.question_id, e.query) for e in self.dataset]
        chunk_set, run = self._retrieve(queries, chunker, embedder, vector_store, retrieval, collection)
        result = token_level_result(
            self.dataset.examples, run.hits, chunk_set.chunks, retrieval.profile.top_k, self.corpus, names
        )
        return _logged(result, experiment)


class ChunkLevelEvaluation(_Evaluation):
    """Judges retrieval against chunk IDs; only valid for the chunker that made those IDs."""

    evaluation_type: EvaluationType = "chunk-level"

    def __init__(self, corpus: Corpus, dataset: ChunkLevelDataset, progress: Progress = no_progress) -> None:
        super().__init__(corpus, progress)
        self.dataset = dataset

    def run(
        self,
        chunker: Chunker,
        embedder: Embedder,
        vector_store: VectorStore,
        k: int | None = None,
        metrics: Sequence[str] | None = None,
        collection: str | None = None,
        experiment: ExperimentSink | None = None,
        profile: RetrievalProfile | None = None,
        reranker: Reranker | None = None,
        rewriter: QueryRewriter | None = None,
    ) -> EvaluationResult:
        retrieval = Retrieval.of(k, profile, reranker, rewriter)
        if chunker.fingerprint != self.dataset.chunker_fingerprint:
            raise ConfigError(
                f"chunk-level dataset {self.dataset.name!r} was made with chunker "
                f"{self.dataset.chunker_fingerprint!r}, not {chunker.fingerprint!r}: its chunk IDs mean nothing "
                f"for another chunker. Use that chunker, or evaluate token-level ground truth instead"
            )
        names = selected_metrics(CHUNK_METRICS, metrics)
        queries = [Query(e.question_id, e.query) for e in self.dataset]
        _, run = self._retrieve(queries, chunker, embedder, vector_store, retrieval, collection)
        result = chunk_level_result(self.dataset.examples, run.hits, retrieval.profile.top_k, names)
        return _logged(result, experiment)


def _logged(result: EvaluationResult, experiment: ExperimentSink | None) -> EvaluationResult:
    """The result with the experiment's URL, when a sink logged it."""
    return replace(result, experiment_url=experiment(result)) if experiment is not None else result
