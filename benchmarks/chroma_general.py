"""Benchmark on chroma_general (Chroma's chunking-evaluation data): quality and speed, core API only.

All corpora go into one index per chunk config; every question retrieves its top k chunks, scored with
the project's token-level metrics. Speed is measured per step: chunking, embedding (cold, then from the
cache), indexing, retrieval (against an exact numpy baseline) and metric computation.

    python benchmarks/chroma_general.py [--chunk-configs data/chunk_configs.yaml] [--k 5]
        [--limit-questions N] [--only NAME,...] [--cache-dir DIR] [--data DIR]
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from rag_eval_pipeline.core.chunking import build_chunker, chunk_corpus
from rag_eval_pipeline.core.configs import ChunkConfig, load_chunk_configs
from rag_eval_pipeline.core.corpus import Corpus
from rag_eval_pipeline.core.dataset_import import read_token_level_csv
from rag_eval_pipeline.core.datasets import TokenLevelDataset, TokenLevelExample
from rag_eval_pipeline.core.embedding.base import Embedder, Vectors
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.errors import DatasetError, InputError
from rag_eval_pipeline.core.evaluation import TOKEN_LEVEL_METRICS, score_token_level
from rag_eval_pipeline.core.metrics.aggregate import MetricSummary, summarize_table
from rag_eval_pipeline.core.progress import Progress, TqdmProgress, no_progress
from rag_eval_pipeline.core.retrieval import Query, index_chunks, retrieve
from rag_eval_pipeline.core.vector_store.base import collection_name
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/benchmarks/chroma_general"
DEFAULT_CHUNK_CONFIGS = PROJECT_ROOT / "data/chunk_configs.yaml"
REPORTED_METRICS = (
    "span_recall",
    "span_precision",
    "span_iou",
    "precision_chroma",
    "iou_chroma",
    "precision_omega",
    "recall_at_k",
    "mrr",
)
NUMPY_REPEATS = 3
SPEED_COLUMNS = (
    "chunks/s",
    "emb cold/s",
    "emb warm/s",
    "warm/cold",
    "index s",
    "retr q/s",
    "numpy q/s",
    "numpy/retr",
    "score q/s",
    "score peak",
    "peak RSS",
)


@dataclass(frozen=True)
class ConfigResult:
    """Everything measured for one chunk config; times in seconds."""

    name: str
    n_chunks: int
    mean_chunk_chars: float
    n_questions: int
    metrics: Mapping[str, MetricSummary]
    chunk_seconds: float
    embed_cold_seconds: float
    embed_warm_seconds: float
    texts_embedded_cold: int
    texts_embedded_warm: int
    query_embed_seconds: float
    index_seconds: float
    retrieve_seconds: float
    numpy_seconds: float
    topk_agreement: int
    score_seconds: float
    score_peak_bytes: int
    max_rss_bytes: int

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
    def retrieve_per_s(self) -> float:
        return _rate(self.n_questions, self.retrieve_seconds)

    @property
    def numpy_per_s(self) -> float:
        return _rate(self.n_questions, self.numpy_seconds)

    @property
    def score_per_s(self) -> float:
        return _rate(self.n_questions, self.score_seconds)


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def _fmt_rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.1f} MiB" if n_bytes >= 2**20 else f"{n_bytes / 2**10:,.0f} KiB"


def max_rss_bytes() -> int:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def load_benchmark(data: Path) -> tuple[Corpus, TokenLevelDataset]:
    """The corpora and ``questions.csv`` as questions ``chroma-001``, ...; each reference must match its text."""
    corpus = Corpus.from_folder(data / "corpora")
    questions = data / "questions.csv"
    if not questions.is_file():
        raise DatasetError(f"question file {questions} does not exist; pass --data DIR")
    return corpus, read_token_level_csv(questions, corpus, id_prefix="chroma-", name="chroma_general")


def numpy_top_k(matrix: Vectors, query: Vectors, k: int) -> npt.NDArray[np.intp]:
    """Exact top ``k`` rows of ``matrix`` by dot product with one normalised query, best first."""
    scores = matrix @ query
    if k >= len(scores):
        return np.argsort(-scores, kind="stable")
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def _time_numpy(matrix: Vectors, queries: Vectors, k: int) -> tuple[float, list[npt.NDArray[np.intp]]]:
    """Best of ``NUMPY_REPEATS`` passes of one ``M @ q`` per query (the first pass also warms BLAS)."""
    best = float("inf")
    tops: list[npt.NDArray[np.intp]] = []
    for _ in range(NUMPY_REPEATS):
        started = time.perf_counter()
        tops = [numpy_top_k(matrix, q, k) for q in queries]
        best = min(best, time.perf_counter() - started)
    return best, tops


def _traced_peak(func: Any) -> int:
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


def run_config(
    config: ChunkConfig,
    corpus: Corpus,
    examples: Sequence[TokenLevelExample],
    embedder: Embedder,
    store: QdrantVectorStore,
    cache_path: Path,
    k: int,
    out: TextIO,
    progress: Progress = no_progress,
) -> ConfigResult:
    """Chunk, embed cold and warm, index, retrieve, score and report one chunk config."""

    def say(label: str, text: str) -> None:
        print(f"{label:<12}{text}", file=out, flush=True)

    print(
        f"\n== {config.name} ({config.chunker}, size {config.chunk_size}, overlap {config.chunk_overlap}) ==",
        file=out,
    )
    started = time.perf_counter()
    chunks = chunk_corpus(build_chunker(config, embedder=embedder), corpus)
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
        f"{_fmt_rate(_rate(len(queries), query_embed_seconds))} queries/s (cold)",
    )

    collection = collection_name(config.name, embedder.model_id)
    started = time.perf_counter()
    index_chunks(chunks, warm, store, collection, config.name)
    index_seconds = time.perf_counter() - started
    say(
        "indexing",
        f"{index_seconds:.2f} s for {len(chunks):,} chunks (index_chunks: cache lookup + Qdrant upsert)",
    )

    started = time.perf_counter()
    retrieved = retrieve(queries, warm, store, collection, k)
    retrieve_seconds = time.perf_counter() - started
    numpy_seconds, tops = _time_numpy(vectors, query_vectors, k)
    agreement = sum(
        {h.chunk_id for h in retrieved[q.question_id]} == {chunks[i].chunk_id for i in top}
        for q, top in zip(queries, tops, strict=True)
    )
    ratio = retrieve_seconds / numpy_seconds if numpy_seconds > 0 else float("inf")
    say(
        "retrieval",
        f"retrieve() (Qdrant local, query vectors from the cache): {len(queries):,} queries in "
        f"{retrieve_seconds:.3f} s: {_fmt_rate(_rate(len(queries), retrieve_seconds))} queries/s",
    )
    say(
        "",
        f"numpy M @ q baseline (exact, best of {NUMPY_REPEATS}): {numpy_seconds * 1000:.1f} ms: "
        f"{_fmt_rate(_rate(len(queries), numpy_seconds))} queries/s, {ratio:,.0f}x faster; "
        f"same top-{k} set for {agreement}/{len(queries)} queries",
    )

    started = time.perf_counter()
    scores = score_token_level(examples, retrieved, chunks, k)
    score_seconds = time.perf_counter() - started
    peak = _traced_peak(lambda: score_token_level(examples, retrieved, chunks, k))
    say(
        "metrics",
        f"{len(examples):,} questions in {score_seconds:.3f} s: "
        f"{_fmt_rate(_rate(len(examples), score_seconds))} questions/s; tracemalloc peak {_mib(peak)}",
    )
    cold.cache.close()
    warm.cache.close()
    rss = max_rss_bytes()
    say("memory", f"peak RSS of the process so far {_mib(rss)}")

    rows = [scores[e.question_id] for e in examples]
    summaries = summarize_table(rows, REPORTED_METRICS)
    print(f"{'metric':<18}{'mean':>7}   95% CI (bootstrap), n={len(rows)}", file=out)
    for name, s in summaries.items():
        print(f"{name:<18}{s.mean:>7.3f}   [{s.ci_low:.3f}, {s.ci_high:.3f}]", file=out)
    out.flush()

    return ConfigResult(
        name=config.name,
        n_chunks=len(chunks),
        mean_chunk_chars=mean_chars,
        n_questions=len(examples),
        metrics=summaries,
        chunk_seconds=chunk_seconds,
        embed_cold_seconds=embed_cold_seconds,
        embed_warm_seconds=embed_warm_seconds,
        texts_embedded_cold=cold.texts_embedded,
        texts_embedded_warm=warm.texts_embedded,
        query_embed_seconds=query_embed_seconds,
        index_seconds=index_seconds,
        retrieve_seconds=retrieve_seconds,
        numpy_seconds=numpy_seconds,
        topk_agreement=agreement,
        score_seconds=score_seconds,
        score_peak_bytes=peak,
        max_rss_bytes=rss,
    )


def format_tables(results: Sequence[ConfigResult], k: int) -> str:
    """Two compact tables: retrieval quality (means) and speed/memory."""
    short = {
        "span_recall": "recall",
        "span_precision": "prec",
        "span_iou": "iou",
        "precision_chroma": "prec_chr",
        "iou_chroma": "iou_chr",
        "precision_omega": "prec_omega",
        "recall_at_k": f"recall@{k}",
        "mrr": "mrr",
    }
    width = max([len("config"), *(len(r.name) for r in results)])
    quality_header = f"{'config':<{width}} {'chunks':>6} " + " ".join(
        f"{short[m]:>10}" for m in REPORTED_METRICS
    )
    lines = [f"Quality (means over the questions, k={k})", quality_header, "-" * len(quality_header)]
    for r in results:
        values = " ".join(f"{r.metrics[m].mean:>10.3f}" for m in REPORTED_METRICS)
        lines.append(f"{r.name:<{width}} {r.n_chunks:>6} {values}")
    speed_header = f"{'config':<{width}} " + " ".join(f"{c:>10}" for c in SPEED_COLUMNS)
    lines += ["", "Speed and memory (MiB)", speed_header, "-" * len(speed_header)]
    for r in results:
        cells = (
            _fmt_rate(r.chunks_per_s),
            _fmt_rate(r.cold_per_s),
            _fmt_rate(r.warm_per_s),
            f"{r.warm_per_s / r.cold_per_s:,.0f}x",
            f"{r.index_seconds:.2f}",
            _fmt_rate(r.retrieve_per_s),
            _fmt_rate(r.numpy_per_s),
            f"{r.numpy_per_s / r.retrieve_per_s:,.0f}x",
            _fmt_rate(r.score_per_s),
            f"{r.score_peak_bytes / 2**20:.1f}",
            f"{r.max_rss_bytes / 2**20:,.0f}",
        )
        lines.append(f"{r.name:<{width}} " + " ".join(f"{c:>10}" for c in cells))
    return "\n".join(lines)


def select_configs(configs: Sequence[ChunkConfig], only: str | None) -> list[ChunkConfig]:
    """The configs named in the comma-separated ``only`` (all when None), in file order."""
    if not only:
        return list(configs)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    known = {c.name for c in configs}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise InputError(
            f"--only: unknown chunk config(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return [c for c in configs if c.name in wanted]


def run_benchmark(
    configs: Sequence[ChunkConfig],
    corpus: Corpus,
    dataset: TokenLevelDataset,
    embedder: Embedder,
    k: int,
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
                run_config(config, corpus, dataset.examples, embedder, store, cache_path, k, out, progress)
            )
        store.close()
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="folder with corpora/ and questions.csv"
    )
    parser.add_argument(
        "--chunk-configs", type=Path, default=DEFAULT_CHUNK_CONFIGS, help="YAML of chunk configs"
    )
    parser.add_argument("--k", type=int, default=5, help="chunks retrieved per question (default 5)")
    parser.add_argument(
        "--limit-questions", type=int, default=None, metavar="N", help="only the first N questions"
    )
    parser.add_argument("--only", default=None, metavar="NAME,...", help="only these chunk configs")
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="embedding cache folder (default: a fresh temporary one)"
    )
    args = parser.parse_args(argv)
    if args.k <= 0:
        parser.error("--k must be >= 1")
    if args.limit_questions is not None and args.limit_questions <= 0:
        parser.error("--limit-questions must be >= 1")
    return args


def main(
    argv: Sequence[str] | None = None,
    embedder: Embedder | None = None,
    out: TextIO | None = None,
    progress: Progress | None = None,
) -> int:
    """Run the benchmark; ``embedder`` defaults to the real MiniLM model (tests pass a cheap one)."""
    out = out or sys.stdout
    args = parse_args(argv)
    total_started = time.perf_counter()
    try:
        configs = select_configs(load_chunk_configs(args.chunk_configs), args.only)
        corpus, dataset = load_benchmark(args.data)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.limit_questions is not None:
        dataset = TokenLevelDataset(dataset.examples[: args.limit_questions], name=dataset.name)
    if embedder is None:
        from rag_eval_pipeline.core.embedding.local import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    if progress is None:
        progress = TqdmProgress()

    n_refs = sum(len(e.relevant_spans) for e in dataset)
    print(f"chroma_general benchmark: {args.data}", file=out)
    print(
        f"corpora: {len(corpus)} documents, {corpus.total_characters:,} characters; "
        f"questions: {len(dataset)} ({n_refs} references); k={args.k}; "
        f"configs: {', '.join(c.name for c in configs)}",
        file=out,
    )
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
        results = run_benchmark(configs, corpus, dataset, embedder, args.k, args.cache_dir, out, progress)
    else:
        with tempfile.TemporaryDirectory(prefix="chroma-bench-cache-") as cache_dir:
            results = run_benchmark(
                configs, corpus, dataset, embedder, args.k, Path(cache_dir), out, progress
            )

    print("\n" + format_tables(results, args.k), file=out)
    print(f"\ntotal runtime {time.perf_counter() - total_started:.1f} s", file=out)
    out.flush()
    return 0


if not set(REPORTED_METRICS) <= set(TOKEN_LEVEL_METRICS):  # a renamed core metric fails here, not silently
    raise ImportError(f"unknown metric(s) {set(REPORTED_METRICS) - set(TOKEN_LEVEL_METRICS)}")

if __name__ == "__main__":
    sys.exit(main())
