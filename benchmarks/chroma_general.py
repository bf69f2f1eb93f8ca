"""Benchmark on chroma_general (Chroma's chunking-evaluation data): quality and speed, core API only.

All corpora go into one Qdrant collection and one BM25 index per chunk config; every retrieval profile
(dense, keyword, hybrid by weighted RRF) then answers every question, and its hits are scored with the
project's token-level metrics. Each step is the core function the pipeline's assets and the notebook API
call: ``cut_corpus``, ``build_indexes``, ``retrieve``, ``token_level_result``. Speed is measured per
step: chunking, embedding (cold, then from the cache), indexing (Qdrant and BM25), each retrieval stage
(knn, bm25, fusion; against an exact numpy baseline measured in the same process) and scoring.

Every (chunk config, profile, question) is also written to Parquet under ``--out``: ``questions.parquet``
(one row each, every token-level metric) and ``retrieved.parquet`` (one row per retrieved rank).
``--published-sotu`` instead reproduces the single-corpus figure Chroma published (state_of_the_union,
cl100k token windows of 200, all-MiniLM-L6-v2, k = 5) and prints ours beside it.

    python benchmarks/chroma_general.py [--chunk-configs data/chunk_configs.yaml] [--only NAME,...]
        [--profiles data/retrieval_profiles.yaml] [--only-profiles NAME,...]
        [--questions FILE] [--corpora NAME,...] [--limit-questions N] [--cache-dir DIR] [--data DIR]
        [--out DIR] [--published-sotu]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.embedding.base import Embedder, Vectors
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.embedding.local import MINILM_MODEL_ID
from rag_eval_pipeline.core.errors import DatasetError, InputError, StorageError
from rag_eval_pipeline.core.evaluation.evaluation import EvaluationResult, token_level_result
from rag_eval_pipeline.core.metrics.aggregate import MetricSummary, summarize_table
from rag_eval_pipeline.core.metrics.names import TOKEN_LEVEL_METRICS
from rag_eval_pipeline.core.progress import Progress, TqdmProgress, no_progress
from rag_eval_pipeline.core.questions.dataset_import import read_token_level_csv
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, TokenLevelExample
from rag_eval_pipeline.core.retrieval.base import Query, RetrievalRun
from rag_eval_pipeline.core.retrieval.hit_order import SCORE_DECIMALS, document_order
from rag_eval_pipeline.core.retrieval.indexes import ChunkIndexes, build_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.settings.configs import (
    ChunkConfig,
    RetrievalProfile,
    Retriever,
    load_chunk_configs,
    load_profiles,
)
from rag_eval_pipeline.core.store.files import make_folder
from rag_eval_pipeline.core.store.warehouse import write_parquet_files
from rag_eval_pipeline.core.tables import retrieved_to_frame
from rag_eval_pipeline.core.types import (
    ChunkConfigName,
    PositionAwareChunk,
    ProfileName,
    QuestionId,
    RetrievedChunk,
)
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline.core.vector_store.engines import DEFAULT_ENGINE, open_vector_store
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore

_T = TypeVar("_T")

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _default_data() -> Path:
    """``shared/benchmarks/chroma_general`` beside the checkout, or beside a folder above it (a git
    worktree lives deeper than the main checkout); the first place when none exists (the error names it)."""
    places = [parent / "shared/benchmarks/chroma_general" for parent in Path(__file__).resolve().parents[2:]]
    return next((place for place in places if place.is_dir()), places[0])


DEFAULT_DATA = _default_data()
DEFAULT_CHUNK_CONFIGS = PROJECT_ROOT / "data/chunk_configs.yaml"
DEFAULT_PROFILES = PROJECT_ROOT / "data/retrieval_profiles.yaml"
# The questions in --data, first that exists: this subset's name, then the public benchmark's own
# (chunking_evaluation's general_evaluation_data/questions_df.csv), so its folder works as it ships.
QUESTION_FILES = ("questions.csv", "questions_df.csv")
# Each run writes its Parquet files into a fresh folder here unless --out names one (git ignores it).
DEFAULT_OUT_ROOT = PROJECT_ROOT / "benchmarks/results/chroma_general"
QUESTIONS_PARQUET = "questions.parquet"
RETRIEVED_PARQUET = "retrieved.parquet"
REPORTED_METRICS = (
    "span_recall",
    "span_precision",
    "span_iou",
    "precision_chroma",
    "iou_chroma",
    "precision_omega",
    "precision_omega_chroma",
    "recall_at_k",
    "mrr",
)
SHORT_NAMES = {
    "span_recall": "recall",
    "span_precision": "prec",
    "span_iou": "iou",
    "precision_chroma": "prec_chr",
    "iou_chroma": "iou_chr",
    "precision_omega": "prec_omg",
    "precision_omega_chroma": "omg_chr",
    "recall_at_k": "recall@k",
    "mrr": "mrr",
}
NUMPY_REPEATS = 3
# Each profile runs this many times; speed is the best pass per stage, and the hits must not change.
SPEED_PASSES = 3
RETRIEVAL_STAGES = ("embed", "knn", "bm25", "fusion")
# The index sides, built one at a time so each is timed alone.
DENSE_SIDE: tuple[Retriever, ...] = ("knn",)
KEYWORD_SIDE: tuple[Retriever, ...] = ("bm25",)
FOUND_BY = ("knn", "bm25", "both")
# Compared question by question against the first profile (paired bootstrap of the differences).
PAIRED_METRICS = ("span_recall", "span_iou", "mrr")
CONFIG_SPEED_COLUMNS = (
    "chunks/s",
    "emb cold/s",
    "emb warm/s",
    "warm/cold",
    "index s",
    "bm25 idx/s",
    "open s",
    "score q/s",
    "score peak",
    "peak RSS",
)
PROFILE_SPEED_COLUMNS = (
    "e2e q/s",
    "knn q/s",
    "bm25 q/s",
    "fuse q/s",
    "numpy q/s",
    "numpy/knn",
    "numpy/bm25",
    "fuse/knn",
    "knn/bm25/both %",
)


@dataclass(frozen=True)
class ProfileResult:
    """One profile on one chunk config; times in seconds, the best of ``SPEED_PASSES`` passes each."""

    profile: RetrievalProfile
    n_questions: int
    metrics: Mapping[str, MetricSummary]
    total_seconds: float
    stage_seconds: Mapping[str, float]  # keys from RetrievalRun.seconds
    stable: bool  # every pass returned the same hits
    numpy_seconds: float  # exact dense top-``candidate_depth`` on the same vectors
    numpy_agreement: int | None  # queries whose knn hits match numpy's; None without knn
    found_by: Mapping[str, int]  # final hits by the retrievers that returned them
    score_seconds: float
    score_peak_bytes: int
    evaluation: EvaluationResult  # every token-level metric and the hits, per question in dataset order

    @property
    def scores(self) -> tuple[Mapping[str, float], ...]:
        return tuple(r.metrics for r in self.evaluation.raw_results)

    @property
    def e2e_per_s(self) -> float:
        return _rate(self.n_questions, self.total_seconds)

    @property
    def numpy_per_s(self) -> float:
        return _rate(self.n_questions, self.numpy_seconds)

    def stage_per_s(self, stage: str) -> float | None:
        """Queries/s of one stage; None when the profile does not run it (fusion: only when fused)."""
        if stage not in self.stage_seconds or (stage == "fusion" and not self.profile.is_fused):
            return None
        return _rate(self.n_questions, self.stage_seconds[stage])

    def found_by_shares(self) -> dict[str, float]:
        total = sum(self.found_by.values())
        return {name: self.found_by.get(name, 0) / total if total else 0.0 for name in FOUND_BY}


@dataclass(frozen=True)
class ConfigResult:
    """Everything measured for one chunk config; times in seconds."""

    name: str
    n_chunks: int
    mean_chunk_chars: float
    n_questions: int
    chunk_seconds: float
    embed_cold_seconds: float
    embed_warm_seconds: float
    texts_embedded_cold: int
    texts_embedded_warm: int
    query_embed_seconds: float
    index_seconds: float
    keyword_build_seconds: float
    qdrant_open_seconds: float
    max_rss_bytes: int
    profiles: tuple[ProfileResult, ...]

    @property
    def chunks_per_s(self) -> float:
        return _rate(self.n_chunks, self.chunk_seconds)

    @property
    def cold_per_s(self) -> float:
        return _rate(self.n_chunks, self.embed_cold_seconds)

    @property
    def warm_per_s(self) -> float:
        return _rate(self.n_chunks, self.embed_warm_seconds)

    @property
    def keyword_build_per_s(self) -> float:
        return _rate(self.n_chunks, self.keyword_build_seconds)

    @property
    def score_per_s(self) -> float:
        """Questions scored per second, over every profile of this config."""
        return _rate(len(self.profiles) * self.n_questions, sum(p.score_seconds for p in self.profiles))

    @property
    def score_peak_bytes(self) -> int:
        return max((p.score_peak_bytes for p in self.profiles), default=0)


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def _fmt_rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _fmt_ratio(value: float | None) -> str:
    """How many times one figure is another: ``74x``, ``2.3x``, ``0.41x``."""
    if value is None:
        return "-"
    if value >= 10:
        return f"{value:,.0f}x"
    return f"{value:.1f}x" if value >= 1 else f"{value:.2f}x"


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.1f} MiB" if n_bytes >= 2**20 else f"{n_bytes / 2**10:,.0f} KiB"


def max_rss_bytes() -> int:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


@dataclass(frozen=True)
class BenchmarkData:
    """The corpora and questions of one run. ``dropped``: questions of the file left out because they
    ask about corpora not selected (``--corpora``), per corpus name."""

    corpus: Corpus
    dataset: TokenLevelDataset
    questions_file: Path
    questions_in_file: int
    dropped: Mapping[str, int]


def corpus_name(doc_id: str) -> str:
    """A corpus's name as the questions' ``corpus_id`` and ``--corpora`` give it: its file's stem."""
    return doc_id.removesuffix(".md")


def load_benchmark(data: Path, questions: Path | None = None, corpora: str | None = None) -> BenchmarkData:
    """``<data>/corpora`` and a questions CSV (default ``<data>/questions.csv``, else the public
    benchmark's ``<data>/questions_df.csv``) as questions ``chroma-<row>``. Every reference is checked
    against its corpus; then, when ``corpora`` (names, comma-separated) is given, only those corpora and
    the questions about them are kept."""
    corpus = Corpus.from_folder(data / "corpora")
    if questions is None:
        found = [data / name for name in QUESTION_FILES if (data / name).is_file()]
        if not found:
            raise DatasetError(
                f"{data} holds no questions file ({' or '.join(QUESTION_FILES)}); pass --questions FILE "
                f"or --data DIR"
            )
        path = found[0]
    else:
        path = questions
    if not path.is_file():
        raise DatasetError(f"question file {path} does not exist; pass --questions FILE or --data DIR")
    name = "chroma_general" if questions is None else path.stem
    dataset = read_token_level_csv(path, corpus, id_prefix="chroma-", name=name)
    total = len(dataset)
    if not corpora:
        return BenchmarkData(corpus, dataset, path, total, {})
    what = f"corpus name(s) (files of {corpus.root})"
    selected = select_by_name(list(corpus), corpora, "--corpora", what, lambda d: corpus_name(d.doc_id))
    kept_docs = {d.doc_id for d in selected}
    kept: list[TokenLevelExample] = []
    dropped: Counter[str] = Counter()
    for example in dataset:
        docs = {s.doc_id for s in example.relevant_spans}  # one corpus per row of this CSV format
        if docs <= kept_docs:
            kept.append(example)
        else:
            dropped.update(corpus_name(doc) for doc in docs - kept_docs)
    if not kept:
        raise DatasetError(
            f"{path}: none of its {total} questions asks about {corpora} (--corpora); they ask about "
            + ", ".join(f"{name} ({n})" for name, n in sorted(dropped.items()))
        )
    subset = Corpus(tuple(selected), root=corpus.root)
    return BenchmarkData(
        subset, TokenLevelDataset(tuple(kept), name=dataset.name), path, total, dict(dropped)
    )


def document_positions(chunks: Sequence[PositionAwareChunk]) -> npt.NDArray[np.intp]:
    """Each chunk's rank in document order (core/retrieval/hit_order.py), for ``numpy_top_k``'s ties."""
    order = sorted(range(len(chunks)), key=lambda i: document_order(chunks[i]))
    positions = np.empty(len(chunks), dtype=np.intp)
    positions[order] = np.arange(len(chunks))
    return positions


def numpy_top_k(
    matrix: Vectors, query: Vectors, k: int, positions: npt.NDArray[np.intp] | None = None
) -> npt.NDArray[np.intp]:
    """Exact top ``k`` rows of ``matrix`` by dot product with one normalised query, best first, ties
    (scores equal to ``SCORE_DECIMALS``) in document order as every engine of the project breaks them:
    ``positions`` gives each row's rank in document order (default: rows are in document order)."""
    scores = np.round(matrix @ query, SCORE_DECIMALS)
    if positions is None:
        positions = np.arange(len(scores))
    if k < len(scores):
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= kth)  # every row tied with the k-th stays in
    else:
        candidates = np.arange(len(scores))
    return candidates[np.lexsort((positions[candidates], -scores[candidates]))][:k]


def _time_numpy(
    matrix: Vectors, queries: Vectors, k: int, positions: npt.NDArray[np.intp]
) -> tuple[float, list[npt.NDArray[np.intp]]]:
    """Best of ``NUMPY_REPEATS`` passes of one ``M @ q`` per query (the first pass also warms BLAS)."""
    best = float("inf")
    tops: list[npt.NDArray[np.intp]] = []
    for _ in range(NUMPY_REPEATS):
        started = time.perf_counter()
        tops = [numpy_top_k(matrix, q, k, positions) for q in queries]
        best = min(best, time.perf_counter() - started)
    return best, tops


def _traced_peak(func: Callable[[], object]) -> int:
    """Peak bytes Python allocates while ``func()`` runs (tracemalloc, so slower than untraced)."""
    was_tracing = tracemalloc.is_tracing()
    if was_tracing:
        tracemalloc.reset_peak()
    else:
        tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        if not was_tracing:
            tracemalloc.stop()


def skip_reason(profile: RetrievalProfile) -> str | None:
    """Why the offline, deterministic benchmark cannot run a profile (None: it can)."""
    needs = []
    if profile.reranker is not None:
        needs.append(f"a reranker ({profile.reranker})")
    if profile.query_rewrite_enabled:
        needs.append("query rewriting by an LLM")
    return f"needs {' and '.join(needs)}" if needs else None


def describe_profile(profile: RetrievalProfile) -> str:
    if profile.is_fused:
        how = (
            f"knn {profile.vector_weight:g} + bm25 {profile.keyword_weight:g} by RRF (rrf_k "
            f"{profile.rrf_k:g}), top {profile.top_k} of {profile.candidate_depth} candidates each"
        )
    else:
        how = f"{profile.retrievers[0]} only, top {profile.top_k}"
    if profile.similarity_threshold is not None:
        how += f", dense similarity >= {profile.similarity_threshold:g}"
    return how


def _hit_keys(run: RetrievalRun) -> dict[QuestionId, list[tuple[str, int]]]:
    return {qid: [(h.chunk_id, h.rank) for h in hits] for qid, hits in run.hits.items()}


def _numpy_agreement(
    profile: RetrievalProfile,
    queries: Sequence[Query],
    hits: Mapping[QuestionId, Sequence[RetrievedChunk]],
    tops: Sequence[npt.NDArray[np.intp]],
    chunks: Sequence[PositionAwareChunk],
) -> int:
    """Queries whose knn hits agree with numpy's exact ranking. Dense-only without a threshold: the
    same top-k list, in the same order (ties in document order on both sides). Otherwise every chunk the
    dense side contributed lies in numpy's top-depth."""
    agree = 0
    for query, top in zip(queries, tops, strict=True):
        exact = [chunks[i].chunk_id for i in top]
        from_knn = [h.chunk_id for h in hits[query.question_id] if h.knn_rank is not None]
        if not profile.is_fused and profile.similarity_threshold is None:
            agree += from_knn == exact[: profile.top_k]
        else:
            agree += set(from_knn) <= set(exact)
    return agree


def run_profile(
    profile: RetrievalProfile,
    queries: Sequence[Query],
    examples: Sequence[TokenLevelExample],
    corpus: Corpus,
    chunks: Sequence[PositionAwareChunk],
    indexes: ChunkIndexes,
    numpy_baseline: Callable[[int], tuple[float, list[npt.NDArray[np.intp]]]],
    out: TextIO,
) -> ProfileResult:
    """Run one profile ``SPEED_PASSES`` times (best time per stage), then score its hits."""

    def say(label: str, text: str) -> None:
        print(f"{label:<12}{text}", file=out, flush=True)

    print(f"\n-- {profile.name}: {describe_profile(profile)} --", file=out)
    first: RetrievalRun | None = None
    total = float("inf")
    stages: dict[str, float] = {}
    stable = True
    for _ in range(SPEED_PASSES):
        started = time.perf_counter()
        run = retrieve(profile, indexes, queries)  # no progress bar: it would be timed too
        elapsed = time.perf_counter() - started
        if first is None:
            first = run
        else:
            stable = stable and _hit_keys(run) == _hit_keys(first)
        total = min(total, elapsed)
        for stage, seconds in run.seconds.items():
            stages[stage] = min(stages.get(stage, float("inf")), seconds)
    assert first is not None
    hits = first.hits
    n = len(queries)

    depth = profile.candidate_depth
    numpy_seconds, tops = numpy_baseline(depth)
    numpy_rate = _rate(n, numpy_seconds)
    agreement = _numpy_agreement(profile, queries, hits, tops, chunks) if dense_used(profile) else None
    found_by: Counter[str] = Counter(h.found_by for q in queries for h in hits[q.question_id])

    say(
        "speed",
        f"best of {SPEED_PASSES} passes, "
        + ("identical hits in every pass" if stable else "WARNING: the hits changed between passes")
        + f"; end-to-end {n:,} queries in {total:.3f} s: {_fmt_rate(_rate(n, total))} queries/s",
    )
    if "embed" in stages:
        say("", f"embed  {stages['embed']:.3f} s (query vectors from the cache)")
    if "knn" in stages:
        knn_rate = _rate(n, stages["knn"])
        say(
            "",
            f"knn    {stages['knn']:.3f} s: {_fmt_rate(knn_rate)} queries/s (Qdrant local, top {depth}); "
            f"numpy exact top-{depth} (best of {NUMPY_REPEATS}) {numpy_seconds * 1000:.1f} ms: "
            f"{_fmt_rate(numpy_rate)} queries/s, {_fmt_ratio(_ratio(numpy_rate, knn_rate))} faster",
        )
        if not profile.is_fused and profile.similarity_threshold is None:
            say("", f"       same top-{profile.top_k} list as numpy for {agreement}/{n} queries")
        else:
            say("", f"       knn hits within numpy's top-{depth} for {agreement}/{n} queries")
    if "bm25" in stages:
        bm25_rate = _rate(n, stages["bm25"])
        say(
            "",
            f"bm25   {stages['bm25']:.3f} s: {_fmt_rate(bm25_rate)} queries/s (tokenize + score every "
            f"chunk, top {depth}); numpy exact dense top-{depth} runs at "
            f"{_fmt_ratio(_ratio(numpy_rate, bm25_rate))} this rate",
        )
    if profile.is_fused:
        fusion_rate = _rate(n, stages["fusion"])
        share = _ratio(stages["fusion"], stages.get("knn"))
        say(
            "",
            f"fusion {stages['fusion']:.4f} s: {_fmt_rate(fusion_rate)} queries/s (weighted RRF: merge "
            f"both lists, sort)" + (f"; {100 * share:.1f}% of the knn time" if share is not None else ""),
        )
        n_hits = sum(found_by.values())
        shares = ", ".join(
            f"{name if name == 'both' else name + ' only'} {found_by.get(name, 0):,} "
            f"({100 * found_by.get(name, 0) / n_hits if n_hits else 0:.0f}%)"
            for name in FOUND_BY
        )
        say("found by", f"{n_hits:,} final hits: {shares}")

    def score() -> EvaluationResult:  # every metric: the Parquet file holds them all
        return token_level_result(examples, hits, chunks, profile.top_k, corpus)

    started = time.perf_counter()
    result = score()
    score_seconds = time.perf_counter() - started
    peak = _traced_peak(score)
    say(
        "metrics",
        f"{len(examples):,} questions in {score_seconds:.3f} s (scores and bootstrap summaries): "
        f"{_fmt_rate(_rate(len(examples), score_seconds))} questions/s; tracemalloc peak {_mib(peak)}",
    )
    summaries = dict(result.metrics)
    print(f"{'metric':<18}{'mean':>7}   95% CI (bootstrap), n={len(result.raw_results)}", file=out)
    for name in REPORTED_METRICS:
        s = summaries[name]
        print(f"{name:<18}{s.mean:>7.3f}   [{s.ci_low:.3f}, {s.ci_high:.3f}]", file=out)
    out.flush()
    return ProfileResult(
        profile=profile,
        n_questions=n,
        metrics=summaries,
        total_seconds=total,
        stage_seconds=stages,
        stable=stable,
        numpy_seconds=numpy_seconds,
        numpy_agreement=agreement,
        found_by=dict(found_by),
        score_seconds=score_seconds,
        score_peak_bytes=peak,
        evaluation=result,
    )


def dense_used(profile: RetrievalProfile) -> bool:
    return "knn" in profile.retrievers


def run_config(
    config: ChunkConfig,
    profiles: Sequence[RetrievalProfile],
    corpus: Corpus,
    examples: Sequence[TokenLevelExample],
    embedder: Embedder,
    store: QdrantVectorStore,
    cache_path: Path,
    out: TextIO,
    progress: Progress = no_progress,
) -> ConfigResult:
    """Chunk, embed cold and warm, build both indexes, run and score every profile for one chunk config."""

    def say(label: str, text: str) -> None:
        print(f"{label:<12}{text}", file=out, flush=True)

    print(
        f"\n== {config.name} ({config.chunker}, size {config.chunk_size}, overlap {config.chunk_overlap}) ==",
        file=out,
    )
    started = time.perf_counter()
    chunk_set = cut_corpus(build_chunker(config, embedder=embedder), corpus, config.name)
    chunks = chunk_set.chunks
    chunk_seconds = time.perf_counter() - started
    texts = [c.text for c in chunks]
    mean_chars = sum(map(len, texts)) / len(texts) if texts else 0.0
    semantic_note = " (includes embedding sentences)" if config.chunker == "semantic" else ""
    say(
        "chunking",
        f"{len(chunks):,} chunks (mean {mean_chars:,.0f} chars, {len(set(texts)):,} distinct) in "
        f"{chunk_seconds:.3f} s: {_fmt_rate(_rate(len(chunks), chunk_seconds))} chunks/s{semantic_note}",
    )

    cold = CachedEmbedder(embedder, EmbeddingCache(cache_path), progress=progress)
    started = time.perf_counter()
    cold_vectors = cold.embed(texts)
    embed_cold_seconds = time.perf_counter() - started
    say(
        "embedding",
        f"cold: {len(texts):,} passages in {embed_cold_seconds:.2f} s: "
        f"{_fmt_rate(_rate(len(texts), embed_cold_seconds))} passages/s "
        f"({cold.texts_embedded:,} embedded, {cold.cache_hits:,} cache hits)",
    )
    if cold.texts_embedded < len(set(texts)):
        say("", "warning: some passages were already cached, so the cold figure is not cold (--cache-dir?)")

    warm = CachedEmbedder(embedder, EmbeddingCache(cache_path), progress=progress)
    started = time.perf_counter()
    vectors = warm.embed(texts)
    embed_warm_seconds = time.perf_counter() - started
    speedup = embed_cold_seconds / embed_warm_seconds if embed_warm_seconds > 0 else float("inf")
    say(
        "",
        f"warm: {len(texts):,} passages in {embed_warm_seconds:.3f} s: "
        f"{_fmt_rate(_rate(len(texts), embed_warm_seconds))} passages/s "
        f"({warm.texts_embedded:,} embedded, {warm.cache_hits:,} cache hits); warm/cold {speedup:,.0f}x"
        + (
            "" if np.array_equal(cold_vectors, vectors) else "; WARNING: cached vectors differ from cold ones"
        ),
    )

    queries = [Query(e.question_id, e.query) for e in examples]
    started = time.perf_counter()
    query_vectors = warm.embed([q.text for q in queries])
    query_embed_seconds = time.perf_counter() - started
    say(
        "queries",
        f"{len(queries):,} embedded in {query_embed_seconds:.2f} s: "
        f"{_fmt_rate(_rate(len(queries), query_embed_seconds))} queries/s (cold; cached for every profile)",
    )

    started = time.perf_counter()
    dense = build_indexes(chunk_set, warm, store, retrievers=DENSE_SIDE)
    index_seconds = time.perf_counter() - started
    say(
        "indexing",
        f"Qdrant: {index_seconds:.2f} s for {len(chunks):,} chunks (build_indexes, knn side: cache lookup "
        f"+ local upsert)",
    )
    started = time.perf_counter()
    keyword = build_indexes(chunk_set, warm, store, retrievers=KEYWORD_SIDE)
    keyword_build_seconds = time.perf_counter() - started
    say(
        "",
        f"BM25: {keyword_build_seconds:.3f} s: {_fmt_rate(_rate(len(chunks), keyword_build_seconds))} "
        f"chunks/s (build_indexes, bm25 side: tokenize, stem, index; in memory)",
    )
    indexes = ChunkIndexes(dense.dense, keyword.keyword)

    numpy_runs: dict[int, tuple[float, list[npt.NDArray[np.intp]]]] = {}
    positions = document_positions(chunks)

    def numpy_baseline(depth: int) -> tuple[float, list[npt.NDArray[np.intp]]]:
        if depth not in numpy_runs:
            numpy_runs[depth] = _time_numpy(vectors, query_vectors, depth, positions)
        return numpy_runs[depth]

    # Open the local collection once for all profiles, so each profile's knn time is search alone.
    started = time.perf_counter()
    with store.session(indexes.collection):
        qdrant_open_seconds = time.perf_counter() - started
        say("", f"Qdrant: opening the local collection {qdrant_open_seconds:.3f} s (once; not in knn)")
        results = tuple(
            run_profile(profile, queries, examples, corpus, chunks, indexes, numpy_baseline, out)
            for profile in profiles
        )
    cold.cache.close()
    warm.cache.close()
    rss = max_rss_bytes()
    print(file=out)
    say("memory", f"peak RSS of the process so far {_mib(rss)}")

    return ConfigResult(
        name=config.name,
        n_chunks=len(chunks),
        mean_chunk_chars=mean_chars,
        n_questions=len(examples),
        chunk_seconds=chunk_seconds,
        embed_cold_seconds=embed_cold_seconds,
        embed_warm_seconds=embed_warm_seconds,
        texts_embedded_cold=cold.texts_embedded,
        texts_embedded_warm=warm.texts_embedded,
        query_embed_seconds=query_embed_seconds,
        index_seconds=index_seconds,
        keyword_build_seconds=keyword_build_seconds,
        qdrant_open_seconds=qdrant_open_seconds,
        max_rss_bytes=rss,
        profiles=results,
    )


def _table(
    title: str, header: Sequence[str], widths: Sequence[int], rows: Sequence[Sequence[str]], names: int
) -> list[str]:
    """The first ``names`` columns left-aligned, the figures right-aligned."""

    def line(cells: Sequence[str]) -> str:
        return " ".join(
            f"{cell:<{w}}" if i < names else f"{cell:>{w}}"
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    head = line(header)
    return [title, head, "-" * len(head), *(line(row) for row in rows)]


def paired_differences(result: ProfileResult, reference: ProfileResult) -> dict[str, MetricSummary]:
    """Mean per-question difference ``result - reference`` with a bootstrap CI: on the same questions
    this separates a real difference from noise far better than two overlapping per-profile CIs."""
    rows = [
        {name: mine[name] - theirs[name] for name in PAIRED_METRICS}
        for mine, theirs in zip(result.scores, reference.scores, strict=True)
    ]
    return summarize_table(rows, PAIRED_METRICS)


def format_tables(results: Sequence[ConfigResult]) -> str:
    """Four compact tables: quality per (config, profile), paired differences against the first
    profile, speed per (config, profile), and the per-config build costs (chunking, embedding,
    indexing, scoring, memory)."""
    config_w = max([len("config"), *(len(r.name) for r in results)])
    profile_w = max([len("profile"), *(len(p.profile.name) for r in results for p in r.profiles)])

    quality_header = ["config", "profile", "k", *(SHORT_NAMES[m] for m in REPORTED_METRICS), "recall 95% CI"]
    quality_widths = [config_w, profile_w, 3, *([8] * len(REPORTED_METRICS)), 15]
    quality_rows = []
    for r in results:
        for p in r.profiles:
            recall = p.metrics["span_recall"]
            quality_rows.append(
                [
                    r.name,
                    p.profile.name,
                    str(p.profile.top_k),
                    *(f"{p.metrics[m].mean:.3f}" for m in REPORTED_METRICS),
                    f"[{recall.ci_low:.3f}, {recall.ci_high:.3f}]",
                ]
            )

    reference = results[0].profiles[0].profile.name if results and results[0].profiles else "-"
    paired_header = ["config", "profile", *(f"diff {SHORT_NAMES[m]} [95% CI]" for m in PAIRED_METRICS)]
    paired_widths = [config_w, profile_w, *([24] * len(PAIRED_METRICS))]
    paired_rows = []
    for r in results:
        for p in r.profiles[1:]:
            deltas = paired_differences(p, r.profiles[0])
            paired_rows.append(
                [
                    r.name,
                    p.profile.name,
                    *(
                        f"{d.mean:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
                        for d in (deltas[m] for m in PAIRED_METRICS)
                    ),
                ]
            )

    speed_header = ["config", "profile", *PROFILE_SPEED_COLUMNS]
    speed_widths = [config_w, profile_w, *(max(9, len(c)) for c in PROFILE_SPEED_COLUMNS)]
    speed_rows = []
    for r in results:
        for p in r.profiles:
            knn, bm25, fusion = (p.stage_per_s(s) for s in ("knn", "bm25", "fusion"))
            shares = p.found_by_shares()
            found = "/".join(f"{100 * shares[name]:.0f}" for name in FOUND_BY) if p.profile.is_fused else "-"
            fusion_share = _ratio(p.stage_seconds.get("fusion"), p.stage_seconds.get("knn"))
            speed_rows.append(
                [
                    r.name,
                    p.profile.name,
                    _fmt_rate(p.e2e_per_s),
                    _fmt_rate(knn),
                    _fmt_rate(bm25),
                    _fmt_rate(fusion),
                    _fmt_rate(p.numpy_per_s),
                    _fmt_ratio(_ratio(p.numpy_per_s, knn)),
                    _fmt_ratio(_ratio(p.numpy_per_s, bm25)),
                    f"{100 * fusion_share:.1f}%" if fusion_share is not None and p.profile.is_fused else "-",
                    found,
                ]
            )

    build_header = ["config", "chunks", *CONFIG_SPEED_COLUMNS]
    build_widths = [config_w, 6, *(max(9, len(c)) for c in CONFIG_SPEED_COLUMNS)]
    build_rows = [
        [
            r.name,
            str(r.n_chunks),
            _fmt_rate(r.chunks_per_s),
            _fmt_rate(r.cold_per_s),
            _fmt_rate(r.warm_per_s),
            _fmt_ratio(_ratio(r.warm_per_s, r.cold_per_s)),
            f"{r.index_seconds:.2f}",
            _fmt_rate(r.keyword_build_per_s),
            f"{r.qdrant_open_seconds:.2f}",
            _fmt_rate(r.score_per_s),
            f"{r.score_peak_bytes / 2**20:.1f}",
            f"{r.max_rss_bytes / 2**20:,.0f}",
        ]
        for r in results
    ]
    tables = [
        _table(
            "Quality (means over the questions; k = the profile's top_k)",
            quality_header,
            quality_widths,
            quality_rows,
            names=2,
        ),
        _table(
            f"Retrieval speed (queries/s, best of {SPEED_PASSES} passes; numpy = exact dense at the same depth)",
            speed_header,
            speed_widths,
            speed_rows,
            names=2,
        ),
        _table("Build speed and memory (MiB)", build_header, build_widths, build_rows, names=1),
    ]
    if paired_rows:  # nothing to compare when only one profile ran
        paired = _table(
            f"Paired differences against {reference} (same questions; mean and 95% bootstrap CI)",
            paired_header,
            paired_widths,
            paired_rows,
            names=2,
        )
        tables.insert(1, paired)
    return "\n\n".join("\n".join(lines) for lines in tables)


def format_checks(results: Sequence[ConfigResult]) -> str:
    """One line on what must hold in every run: repeatable hits, and knn agreeing with exact numpy."""
    runs = [(r.name, p) for r in results for p in r.profiles]
    unstable = [f"{name}/{p.profile.name}" for name, p in runs if not p.stable]
    disagree = [
        f"{name}/{p.profile.name} ({p.numpy_agreement}/{p.n_questions})"
        for name, p in runs
        if p.numpy_agreement is not None and p.numpy_agreement != p.n_questions
    ]
    return "checks: " + "; ".join(
        [
            f"hits changed between passes in {', '.join(unstable)}"
            if unstable
            else f"identical hits in all {SPEED_PASSES} passes of all {len(runs)} (config, profile) runs",
            f"knn disagrees with exact numpy in {', '.join(disagree)}"
            if disagree
            else "knn agrees with exact numpy for every query",
        ]
    )


# What one Parquet block is made of: a chunk config's name, a profile, and its scored questions.
ScoredRun = tuple[str, RetrievalProfile, EvaluationResult]


def scored_runs(results: Sequence[ConfigResult]) -> list[ScoredRun]:
    return [(r.name, p.profile, p.evaluation) for r in results for p in r.profiles]


def questions_frame(runs: Sequence[ScoredRun], examples: Sequence[TokenLevelExample]) -> pd.DataFrame:
    """One row per (chunk config, profile, question): the evaluation's own per-question row (ids, query,
    group, every token-level metric) with the run's keys, the question's corpus and how many references
    and hits it had. The printed means are these metric columns' means."""
    by_id = {e.question_id: e for e in examples}
    rows = []
    for config, profile, evaluation in runs:
        for r, row in zip(evaluation.raw_results, evaluation.metric_rows(), strict=True):
            spans = by_id[r.question_id].relevant_spans
            rest = {name: value for name, value in row.items() if name not in ("question_id", "query")}
            rows.append(
                {
                    "chunk_config": config,
                    "profile": str(profile.name),
                    "k": profile.top_k,
                    "question_id": r.question_id,
                    "query": r.query,
                    "corpus": "+".join(sorted({corpus_name(s.doc_id) for s in spans})),
                    "n_references": len(spans),
                    "n_retrieved": len(r.retrieved),
                    **rest,
                }
            )
    return pd.DataFrame(rows)


def retrieved_frame(runs: Sequence[ScoredRun]) -> pd.DataFrame:
    """One row per retrieved rank, keyed like ``questions_frame`` plus ``rank``: the pipeline's
    retrieval_results columns without the chunk text (``doc_id[start:end]`` of the corpus file)."""
    frames = []
    for config, profile, evaluation in runs:
        frame = retrieved_to_frame({r.question_id: list(r.retrieved) for r in evaluation.raw_results})
        frame = frame.drop(columns="text")
        frame.insert(0, "chunk_config", config)
        frame.insert(1, "profile", str(profile.name))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def write_results(out_dir: Path, runs: Sequence[ScoredRun], examples: Sequence[TokenLevelExample]) -> str:
    """Both Parquet files into ``out_dir``; the line that says where they are."""
    make_folder(out_dir)
    questions = questions_frame(runs, examples)
    retrieved = retrieved_frame(runs)
    write_parquet_files(questions, out_dir / QUESTIONS_PARQUET)
    write_parquet_files(retrieved, out_dir / RETRIEVED_PARQUET)
    return (
        f"per-question results in {out_dir}: {QUESTIONS_PARQUET} ({len(questions):,} rows, one per chunk "
        f"config, profile and question), {RETRIEVED_PARQUET} ({len(retrieved):,} rows, one per rank)"
    )


def default_out_dir(mode: str) -> Path:
    """A fresh folder per run: ``benchmarks/results/chroma_general/<mode>-<UTC time>``."""
    return DEFAULT_OUT_ROOT / f"{mode}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def select_by_name(
    items: Sequence[_T], names: str | None, option: str, what: str, name_of: Callable[[_T], str]
) -> list[_T]:
    """The items named in the comma-separated ``names`` (all when None), in file order."""
    if not names:
        return list(items)
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    known = {name_of(item) for item in items}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise InputError(f"{option}: unknown {what} {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [item for item in items if name_of(item) in wanted]


def select_configs(configs: Sequence[ChunkConfig], only: str | None) -> list[ChunkConfig]:
    return select_by_name(configs, only, "--only", "chunk config(s)", lambda c: c.name)


def select_profiles(profiles: Sequence[RetrievalProfile], only: str | None) -> list[RetrievalProfile]:
    return select_by_name(profiles, only, "--only-profiles", "profile(s)", lambda p: p.name)


def run_benchmark(
    configs: Sequence[ChunkConfig],
    profiles: Sequence[RetrievalProfile],
    corpus: Corpus,
    dataset: TokenLevelDataset,
    embedder: Embedder,
    cache_dir: Path,
    out: TextIO,
    progress: Progress = no_progress,
) -> list[ConfigResult]:
    """Every config against one shared Qdrant folder (temporary) and one cache file per config."""
    results = []
    with tempfile.TemporaryDirectory(prefix="chroma-bench-qdrant-") as qdrant_dir:
        store = QdrantVectorStore(path=qdrant_dir)
        for config in configs:
            cache_path = cache_dir / f"embeddings-{config.name}.sqlite"
            results.append(
                run_config(
                    config, profiles, corpus, dataset.examples, embedder, store, cache_path, out, progress
                )
            )
        store.close()
    return results


@dataclass(frozen=True)
class PublishedFigure:
    """One figure of Chroma's published single-corpus result, in percent, to ``decimals`` places."""

    label: str
    metric: str  # our column that counts it Chroma's way
    mean: float
    std: float  # population std (numpy's default, ddof=0), as Chroma's code computes it
    decimals: int


# Chroma's state_of_the_union figure: FixedTokenChunker (cl100k_base, 200 tokens, no overlap),
# all-MiniLM-L6-v2, top 5. Its precision and IoU sum the k chunks' lengths (our *_chroma columns).
PUBLISHED = (
    PublishedFigure("recall", "span_recall", 91.4, 24.5, 1),
    PublishedFigure("precision", "precision_chroma", 3.83, 2.74, 2),
    PublishedFigure("IoU", "iou_chroma", 3.83, 2.73, 2),
)
PUBLISHED_CORPUS = "state_of_the_union"
PUBLISHED_CONFIG_NAME = "chroma-cl100k-200-0"
PUBLISHED_PROFILE = RetrievalProfile(ProfileName("dense-top5"), top_k=5)


@dataclass(frozen=True)
class MeasuredFigure:
    """Our value of a published figure: mean and population std over the questions, in percent."""

    published: PublishedFigure
    mean: float
    std: float

    def rounded(self) -> tuple[str, str]:
        d = self.published.decimals
        return f"{self.mean:.{d}f}", f"{self.std:.{d}f}"

    @property
    def agrees(self) -> bool:
        """Ours equals the published figure to the digits it was published with."""
        p = self.published
        return self.rounded() == (f"{p.mean:.{p.decimals}f}", f"{p.std:.{p.decimals}f}")


@dataclass(frozen=True)
class PublishedRun:
    data: BenchmarkData
    config: ChunkConfig
    chunks: tuple[PositionAwareChunk, ...]
    evaluation: EvaluationResult
    figures: tuple[MeasuredFigure, ...]
    vector_store: str  # which store answered, and that it searched exactly


def published_config() -> ChunkConfig:
    """Chroma's FixedTokenChunker(encoding_name="cl100k_base", chunk_size=200, chunk_overlap=0)."""
    return ChunkConfig(
        name=ChunkConfigName(PUBLISHED_CONFIG_NAME),
        chunker="token",
        chunk_size=200,
        chunk_overlap=0,
        tokenizer="cl100k_base",
    )


def measure(figure: PublishedFigure, evaluation: EvaluationResult) -> MeasuredFigure:
    summary = evaluation.metrics[figure.metric]
    return MeasuredFigure(figure, 100 * summary.mean, 100 * summary.std_population)


def run_published(data_dir: Path, embedder: Embedder, progress: Progress = no_progress) -> PublishedRun:
    """Chroma's single-corpus setup through the core API: only state_of_the_union and its questions,
    cl100k token windows, the default vector store (exact search) in a temporary folder, top 5 by
    cosine, scored per question; then each published figure's mean and population std."""
    data = load_benchmark(data_dir, corpora=PUBLISHED_CORPUS)
    config = published_config()
    chunk_set = cut_corpus(build_chunker(config), data.corpus, config.name)
    queries = [Query(e.question_id, e.query) for e in data.dataset]
    with tempfile.TemporaryDirectory(prefix="chroma-published-") as folder:
        store = open_vector_store(DEFAULT_ENGINE, path=folder)
        try:
            indexes = build_indexes(chunk_set, embedder, store, retrievers=DENSE_SIDE, progress=progress)
            run = retrieve(PUBLISHED_PROFILE, indexes, queries, progress=progress)
        finally:
            store.close()
    exact = isinstance(store, EdgeVectorStore) and store.exact
    evaluation = token_level_result(
        data.dataset.examples, run.hits, chunk_set.chunks, PUBLISHED_PROFILE.top_k, data.corpus
    )
    return PublishedRun(
        data=data,
        config=config,
        chunks=tuple(chunk_set.chunks),
        evaluation=evaluation,
        figures=tuple(measure(f, evaluation) for f in PUBLISHED),
        vector_store=f"{DEFAULT_ENGINE} ({'exact' if exact else 'approximate'} search)",
    )


def format_published(run: PublishedRun) -> str:
    """Ours beside Chroma's published figures, to more digits and rounded as published."""
    n = len(run.evaluation.raw_results)
    header = ["figure", "column", "published", "ours", "ours rounded", "agrees"]
    widths = [10, 17, 13, 17, 13, 6]
    rows = []
    for m in run.figures:
        p = m.published
        mean, std = m.rounded()
        rows.append(
            [
                p.label,
                p.metric,
                f"{p.mean:.{p.decimals}f} ± {p.std:.{p.decimals}f}",
                f"{m.mean:.{p.decimals + 2}f} ± {m.std:.{p.decimals + 2}f}",
                f"{mean} ± {std}",
                "yes" if m.agrees else "NO",
            ]
        )
    title = f"Chroma's published figure and ours (percent; mean ± population std over {n} questions)"
    return "\n".join(_table(title, header, widths, rows, names=2))


def main_published(args: argparse.Namespace, embedder: Embedder | None, out: TextIO) -> int:
    """``--published-sotu``: one run of Chroma's setup, the comparison, and the Parquet files."""
    started = time.perf_counter()
    out_dir = args.out or default_out_dir("published")
    try:
        make_folder(out_dir)
        embedder = embedder or default_embedder()
        run = run_published(args.data, embedder)
    except (InputError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    c = run.config
    mean_chars = sum(ch.end - ch.start for ch in run.chunks) / len(run.chunks)
    print(f"chroma_general, Chroma's published single-corpus figure: {args.data}", file=out)
    print(describe_data(run.data), file=out)
    print(
        f"chunking: {c.name}: {c.chunker}, {c.tokenizer} tokens, size {c.chunk_size}, overlap "
        f"{c.chunk_overlap}: {len(run.chunks)} chunks (mean {mean_chars:,.0f} chars)",
        file=out,
    )
    print(
        f"retrieval: {describe_profile(PUBLISHED_PROFILE)}, cosine, vector store {run.vector_store}; "
        f"embedder {embedder.model_id}"
        + ("" if embedder.model_id == MINILM_MODEL_ID else f" (NOT the published {MINILM_MODEL_ID})"),
        file=out,
    )
    agree = sum(m.agrees for m in run.figures)
    print("\n" + format_published(run), file=out)
    print(f"\n{agree} of {len(run.figures)} figures agree to the published digits", file=out)
    runs = [(str(c.name), PUBLISHED_PROFILE, run.evaluation)]
    print("\n" + write_results(out_dir, runs, run.data.dataset.examples), file=out)
    print(f"total runtime {time.perf_counter() - started:.1f} s", file=out)
    out.flush()
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="folder with corpora/ and questions.csv (or the public benchmark's questions_df.csv)",
    )
    parser.add_argument(
        "--questions",
        type=Path,
        default=None,
        metavar="FILE",
        help="questions CSV (question, references, corpus_id); default: questions.csv, else "
        "questions_df.csv, in --data",
    )
    parser.add_argument(
        "--corpora",
        default=None,
        metavar="NAME,...",
        help="only these corpora (file stems in --data/corpora) and the questions about them",
    )
    parser.add_argument(
        "--chunk-configs", type=Path, default=DEFAULT_CHUNK_CONFIGS, help="YAML of chunk configs"
    )
    parser.add_argument("--only", default=None, metavar="NAME,...", help="only these chunk configs")
    parser.add_argument(
        "--profiles",
        type=Path,
        default=DEFAULT_PROFILES,
        help="YAML of retrieval profiles; each profile's top_k is its k",
    )
    parser.add_argument("--only-profiles", default=None, metavar="NAME,...", help="only these profiles")
    parser.add_argument(
        "--limit-questions", type=int, default=None, metavar="N", help="only the first N questions"
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="embedding cache folder (default: a fresh temporary one)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"folder for the per-question Parquet files (default: a new one under {DEFAULT_OUT_ROOT})",
    )
    parser.add_argument(
        "--published-sotu",
        action="store_true",
        help="reproduce Chroma's published state_of_the_union figure instead (its own fixed setup)",
    )
    args = parser.parse_args(argv)
    if args.limit_questions is not None and args.limit_questions <= 0:
        parser.error("--limit-questions must be >= 1")
    if args.published_sotu:
        fixed = {
            "--questions": args.questions is not None,
            "--corpora": args.corpora is not None,
            "--chunk-configs": args.chunk_configs != DEFAULT_CHUNK_CONFIGS,
            "--only": args.only is not None,
            "--profiles": args.profiles != DEFAULT_PROFILES,
            "--only-profiles": args.only_profiles is not None,
            "--limit-questions": args.limit_questions is not None,
        }
        given = [option for option, used in fixed.items() if used]
        if given:
            parser.error(
                f"--published-sotu runs Chroma's fixed setup (its corpus, questions, chunker and k); "
                f"drop {', '.join(given)}"
            )
    return args


def describe_data(data: BenchmarkData) -> str:
    """The header line on what was loaded, and what --corpora left out."""
    corpus, dataset = data.corpus, data.dataset
    names = ", ".join(corpus_name(d.doc_id) for d in corpus)
    n_refs = sum(len(e.relevant_spans) for e in dataset)
    line = (
        f"corpora: {names} ({len(corpus)} documents, {corpus.total_characters:,} characters); questions: "
        f"{len(dataset)} ({n_refs} references) from {data.questions_file}"
    )
    if data.dropped:
        left_out = ", ".join(f"{name} {n}" for name, n in sorted(data.dropped.items(), key=lambda i: -i[1]))
        line += (
            f"; {sum(data.dropped.values())} of the file's {data.questions_in_file} questions dropped, "
            f"their corpora not selected ({left_out})"
        )
    return line


def main(
    argv: Sequence[str] | None = None,
    embedder: Embedder | None = None,
    out: TextIO | None = None,
    progress: Progress | None = None,
) -> int:
    """Run the benchmark; ``embedder`` defaults to the real MiniLM model (tests pass a cheap one)."""
    out = out or sys.stdout
    args = parse_args(argv)
    if args.published_sotu:
        return main_published(args, embedder, out)
    total_started = time.perf_counter()
    out_dir = args.out or default_out_dir("benchmark")
    try:
        configs = select_configs(load_chunk_configs(args.chunk_configs), args.only)
        selected = select_profiles(load_profiles(args.profiles), args.only_profiles)
        data = load_benchmark(args.data, args.questions, args.corpora)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    corpus, dataset = data.corpus, data.dataset
    skipped = [(p, reason) for p in selected if (reason := skip_reason(p)) is not None]
    profiles = [p for p in selected if skip_reason(p) is None]
    if not profiles:
        print(
            "error: every selected profile needs a reranker or an LLM, which this offline benchmark does "
            "not run; select others with --only-profiles",
            file=sys.stderr,
        )
        return 2
    try:
        make_folder(out_dir)  # before the run, not after it: a bad --out fails at once
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    header = describe_data(data)
    if args.limit_questions is not None:
        header += f"; --limit-questions: the first {min(args.limit_questions, len(dataset))} of them"
        dataset = TokenLevelDataset(dataset.examples[: args.limit_questions], name=dataset.name)
    if embedder is None:
        embedder = default_embedder()
    if progress is None:
        progress = TqdmProgress()

    print(f"chroma_general benchmark: {args.data}", file=out)
    print(f"{header}; configs: {', '.join(c.name for c in configs)}", file=out)
    print(f"profiles ({args.profiles.name}):", file=out)
    for p in profiles:
        print(f"  {p.name}: {describe_profile(p)}", file=out)
    for p, reason in skipped:
        print(f"  {p.name}: skipped, {reason} (this benchmark runs offline and deterministically)", file=out)
    print(
        f"embedder: {embedder.model_id} (dim {embedder.dimension}); {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()}",
        file=out,
    )
    started = time.perf_counter()
    embedder.embed(["warm-up: load the model before any timing"])
    print(f"model load and first call: {time.perf_counter() - started:.2f} s (not in any figure)", file=out)
    out.flush()

    if args.cache_dir is not None:
        results = run_benchmark(configs, profiles, corpus, dataset, embedder, args.cache_dir, out, progress)
    else:
        with tempfile.TemporaryDirectory(prefix="chroma-bench-cache-") as cache_dir:
            results = run_benchmark(
                configs, profiles, corpus, dataset, embedder, Path(cache_dir), out, progress
            )

    print("\n" + format_tables(results), file=out)
    print("\n" + format_checks(results), file=out)
    print("\n" + write_results(out_dir, scored_runs(results), dataset.examples), file=out)
    print(f"total runtime {time.perf_counter() - total_started:.1f} s", file=out)
    out.flush()
    return 0


def default_embedder() -> Embedder:
    """The project's default embedder, all-MiniLM-L6-v2, as the pipeline runs it (core/embedding/local.py)."""
    from rag_eval_pipeline.core.embedding.local import local_embedder

    return local_embedder()


if not set(REPORTED_METRICS) <= set(TOKEN_LEVEL_METRICS):  # a renamed core metric fails here, not silently
    raise ImportError(f"unknown metric(s) {set(REPORTED_METRICS) - set(TOKEN_LEVEL_METRICS)}")

if __name__ == "__main__":
    sys.exit(main())
