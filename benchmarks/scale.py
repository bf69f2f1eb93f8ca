"""Benchmark at scale: 10k, 50k and 100k chunks of one chunk config, 1,000 questions (issue 16).

A deterministic stand-in embedder (hash-seeded word vectors behind the ``Embedder`` protocol: the real
model would take hours) and a synthetic corpus cut to exactly the wanted number of chunks. Every step is
the core function the pipeline's assets call, in the order they call them:

- the build process (as ``chunks`` and ``chunk_index`` run): ``cut_corpus``; the embedding cache
  (``CachedEmbedder`` + ``EmbeddingCache``) cold, then warm (all hits); ``build_indexes`` cold (the
  upsert, and the BM25 index saved); ``build_indexes`` warm (the collection's fingerprint matches:
  nothing written, the work a warm run does in the vector store); the ``corpus``, ``chunks`` and
  ``eval_questions`` tables written to Parquet by ``Warehouse.write_table``, as the IO manager does;
- a NEW process (as ``retrieval_results`` and ``retrieval_metrics`` run): the tables read back,
  ``open_indexes`` and the collection opened (time and RSS added), ``retrieve`` per profile over all
  questions at once, ``token_level_result``, the results written to Parquet; then per-query latency of
  the dense, keyword and hybrid profiles next to numpy's exact top-k (``M @ q`` + ``argpartition``) in
  the same process, interleaved.

Each size runs in its own pair of child processes, so one size's memory does not pollute the next one's
peak RSS (``getrusage`` of the process doing the stage). At the end: the growth exponent of every stage
between sizes (log(t2/t1) / log(n2/n1); 1 is linear) and the goals of issue 16 at 100k chunks.

    python benchmarks/scale.py [--sizes 10000,50000,100000] [--questions 1000] [--repeats 3]
        [--engine edge|qdrant-local] [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt
import pandas as pd

from rag_eval_pipeline.core.chunking import build_chunker
from rag_eval_pipeline.core.chunking.base import Chunker, ChunkSet, cut_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.embedding.base import Vectors
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.evaluation.evaluation import EvaluationResult, token_level_result
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, TokenLevelExample
from rag_eval_pipeline.core.retrieval.base import Query, RetrievalRun
from rag_eval_pipeline.core.retrieval.indexes import build_indexes, open_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.settings.configs import (
    ChunkConfig,
    RetrievalProfile,
    Retriever,
    load_chunk_configs,
    load_profiles,
)
from rag_eval_pipeline.core.store.warehouse import NO_PARTITION, Warehouse
from rag_eval_pipeline.core.tables import (
    chunks_from_frame,
    chunks_to_frame,
    corpus_from_frame,
    corpus_to_frame,
    questions_from_frame,
    questions_to_frame,
    retrieved_to_frame,
)
from rag_eval_pipeline.core.types import CharacterSpan, Document, DocumentId, QuestionId
from rag_eval_pipeline.core.vector_store.base import VectorStore
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CHUNK_CONFIGS = PROJECT_ROOT / "data/chunk_configs.yaml"
PROFILES = PROJECT_ROOT / "data/retrieval_profiles.yaml"
CHUNK_CONFIG = "recursive-400-50"
PROFILE_NAMES = ("dense-top5", "hybrid-top5", "keyword-top5")  # dense, fused, keyword only
DENSE_SIDE: tuple[Retriever, ...] = ("knn",)
KEYWORD_SIDE: tuple[Retriever, ...] = ("bm25",)
DEFAULT_SIZES = (10_000, 50_000, 100_000)
QUICK_SIZES = (2_000, 5_000)
QUICK_QUESTIONS = 200
ENGINES = ("edge", "qdrant-local")
SEED = 16
DIMENSION = 384  # MiniLM's: the vectors weigh what the real model's would
VOCABULARY = 20_000
GROUPS = 8
RUN_ID = "scale-benchmark"
GOAL_SIZE = 100_000
GOAL_DENSE_RATIO = 2.0
GOAL_WARM_SECONDS = 60.0
GOAL_PEAK_RSS = 2.5e9
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
_WORD = re.compile(r"\w+")


# -- the stand-in embedder -----------------------------------------------------------------------------


class StandInEmbedder:
    """Deterministic stand-in for the sentence model, behind the ``Embedder`` protocol. Each word gets a
    vector drawn from a generator seeded with the word's hash; a text's vector is the normalised sum of
    its words' vectors: a random projection of its bag of words, so texts sharing words are close. The
    same text gets the same vector in any process, batch or order. ``seconds`` sums the time spent in
    ``embed`` (the "model" time of a cold cache pass)."""

    def __init__(self, dimension: int = DIMENSION) -> None:
        self._dimension = dimension
        self._rows: dict[str, int] = {}
        self._matrix = np.zeros((4096, dimension), dtype=np.float32)
        self.seconds = 0.0
        self.texts_seen = 0

    @property
    def model_id(self) -> str:
        return f"stand-in:hash-bow-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _row(self, word: str) -> int:
        row = self._rows.get(word)
        if row is None:
            row = len(self._rows)
            if row == len(self._matrix):
                self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            self._matrix[row] = np.random.default_rng(seed).standard_normal(self._dimension, dtype=np.float32)
            self._rows[word] = row
        return row

    def embed(self, texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            rows = [self._row(w) for w in _WORD.findall(text.lower())]
            if rows:
                out[i] = self._matrix[rows].sum(axis=0)
        norms = np.linalg.norm(out, axis=1)
        empty = norms == 0
        out[empty, 0], norms[empty] = 1.0, 1.0
        out /= norms[:, None]
        self.seconds += time.perf_counter() - started
        self.texts_seen += len(texts)
        return out


# -- the synthetic corpus and questions ----------------------------------------------------------------


def vocabulary(size: int = VOCABULARY, seed: int = SEED) -> list[str]:
    """Distinct pseudo-words of 2-4 syllables, most frequent first (their draw follows Zipf's law)."""
    rng = np.random.default_rng([seed, 0])
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(SYLLABLES[j] for j in rng.integers(0, len(SYLLABLES), int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def synth_document(
    index: int, words: Sequence[str], cdf: npt.NDArray[np.float64], seed: int = SEED
) -> tuple[Document, list[tuple[int, int]]]:
    """Document ``index`` (the same for every run) and the (start, end) of each of its sentences: a
    title, then 4-13 paragraphs of 3-6 sentences of 6-18 words. Paragraphs end in one newline: with a
    blank line between them, the recursive chunker makes a chunk of the lone "\\n" after every paragraph
    longer than a chunk (a fifth of the chunks here)."""
    rng = np.random.default_rng([seed, 1, index])
    group = f"group-{index % GROUPS}"
    paragraphs = [int(n) for n in rng.integers(3, 7, int(rng.integers(4, 14)))]
    lengths = rng.integers(6, 19, sum(paragraphs))
    drawn = np.searchsorted(cdf, rng.random(int(lengths.sum()) + 4))
    title = " ".join(words[j] for j in drawn[:4]).capitalize()
    text = [f"# {title}\n"]
    position = len(text[0])
    spans: list[tuple[int, int]] = []
    cursor, sentence = 4, 0
    for p, n_sentences in enumerate(paragraphs):
        if p:
            text.append("\n")
            position += 1
        for s in range(n_sentences):
            if s:
                text.append(" ")
                position += 1
            n = int(lengths[sentence])
            body = " ".join(words[j] for j in drawn[cursor : cursor + n]).capitalize() + "."
            cursor, sentence = cursor + n, sentence + 1
            text.append(body)
            spans.append((position, position + len(body)))
            position += len(body)
    doc = Document(DocumentId(f"{group}/doc-{index:05d}.md"), "".join(text) + "\n", group)
    return doc, spans


def synth_corpus(
    n_chunks: int, chunker: Chunker, seed: int = SEED
) -> tuple[Corpus, list[list[tuple[int, int]]]]:
    """Documents until the chunker cuts ``n_chunks`` chunks from them (the last one shortened to fit),
    with each document's sentence spans."""
    words = vocabulary(seed=seed)
    weights = 1.0 / (np.arange(len(words)) + 2.7)
    cdf = np.cumsum(weights / weights.sum())
    docs: list[Document] = []
    sentences: list[list[tuple[int, int]]] = []
    total = 0
    while total < n_chunks:
        doc, spans = synth_document(len(docs), words, cdf, seed)
        chunks = chunker.chunk_document(doc)
        if total + len(chunks) > n_chunks:
            end = chunks[n_chunks - total - 1].end
            doc = Document(doc.doc_id, doc.text[:end], doc.group)
            spans = [(s, e) for s, e in spans if e <= end]
            chunks = chunker.chunk_document(doc)
        docs.append(doc)
        sentences.append(spans)
        total += len(chunks)
    return Corpus(tuple(docs)), sentences


def synth_questions(
    corpus: Corpus, sentences: Sequence[Sequence[tuple[int, int]]], n: int, seed: int = SEED
) -> TokenLevelDataset:
    """``n`` questions, each about one sentence (its reference span): the sentence's five rarest words
    in their order, and one frequent word of the vocabulary as noise."""
    words = vocabulary(seed=seed)
    rank = {w: i for i, w in enumerate(words)}
    rng = np.random.default_rng([seed, 2])
    candidates = [i for i, spans in enumerate(sentences) if spans]
    examples = []
    for q in range(n):
        d = candidates[int(rng.integers(len(candidates)))]
        start, end = sentences[d][int(rng.integers(len(sentences[d])))]
        doc = corpus.documents[d]
        distinct = list(dict.fromkeys(_WORD.findall(doc.text[start:end].lower())))
        rare = set(sorted(distinct, key=lambda w: -rank[w])[:5])
        query = " ".join([w for w in distinct if w in rare] + [words[int(rng.integers(200))]])
        span = CharacterSpan(doc.doc_id, start, end, doc.text[start:end])
        examples.append(
            TokenLevelExample(QuestionId(f"scale-{q + 1:04d}"), query, (span,), {"source": "synthetic"})
        )
    return TokenLevelDataset(tuple(examples), name="scale-synthetic")


# -- measuring -----------------------------------------------------------------------------------------


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def current_rss_bytes() -> int:
    """Resident set size now (Linux: /proc/self/statm; elsewhere the peak, the best available)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return peak_rss_bytes()
    return pages * os.sysconf("SC_PAGE_SIZE")


def timed(func: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = func()
    return time.perf_counter() - started, value


def median_time(repeats: int, func: Callable[[], Any]) -> tuple[float, Any]:
    """Median seconds of ``repeats`` calls, and the last call's value."""
    times, value = [], None
    for _ in range(max(1, repeats)):
        seconds, value = timed(func)
        times.append(seconds)
    return median(times), value


def numpy_top_k(matrix: Vectors, query: Vectors, k: int) -> npt.NDArray[np.intp]:
    """Exact top ``k`` rows of ``matrix`` by dot product with one normalised query, best first."""
    scores = matrix @ query
    if k >= len(scores):
        return np.argsort(-scores, kind="stable")
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def one_blas_thread() -> AbstractContextManager[object]:
    """numpy's BLAS held to one thread (threadpoolctl, when installed; else as it is)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    limits: AbstractContextManager[object] = threadpool_limits(limits=1, user_api="blas")
    return limits


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 (linear interpolation)."""
    p50, p95 = np.percentile(np.asarray(values, dtype=np.float64), [50, 95])
    return float(p50), float(p95)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# -- configuration -------------------------------------------------------------------------------------


def chunk_config() -> ChunkConfig:
    (config,) = [c for c in load_chunk_configs(CHUNK_CONFIGS) if c.name == CHUNK_CONFIG]
    return config


def profiles() -> tuple[RetrievalProfile, ...]:
    by_name: dict[str, RetrievalProfile] = {p.name: p for p in load_profiles(PROFILES)}
    return tuple(by_name[name] for name in PROFILE_NAMES)


def edge_missing() -> str | None:
    """Why the edge engine cannot be used here (None: it can)."""
    try:
        from rag_eval_pipeline.core.vector_store import edge  # noqa: F401
    except ImportError as exc:
        return f"rag_eval_pipeline/core/vector_store/edge.py cannot be imported ({exc})"
    return None


def make_store(engine: str, folder: Path) -> VectorStore:
    if engine == "edge":
        from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore

        store: VectorStore = EdgeVectorStore(path=folder)
        return store
    return QdrantVectorStore(path=folder)


def close_store(store: VectorStore) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


class Paths:
    """The files of one size: embedding cache, vector store, BM25 index, warehouse."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.cache = folder / "cache" / "embeddings.sqlite"
        self.vectors = folder / "vectors"
        self.keyword = folder / "keyword" / CHUNK_CONFIG
        self.warehouse = Warehouse(folder / "warehouse")


# -- the build process (chunks, chunk_index) -----------------------------------------------------------


def build_process(size: int, n_questions: int, repeats: int, engine: str, folder: Path) -> dict[str, Any]:
    paths = Paths(folder)
    config = chunk_config()
    seconds: dict[str, float] = {}
    synth_seconds, (corpus, sentences) = timed(lambda: synth_corpus(size, build_chunker(config)))
    dataset = synth_questions(corpus, sentences, n_questions)

    seconds["chunking"], chunk_set = median_time(
        repeats, lambda: cut_corpus(build_chunker(config), corpus, config.name)
    )
    texts = [c.text for c in chunk_set.chunks]

    stand_in = StandInEmbedder()
    paths.cache.parent.mkdir(parents=True, exist_ok=True)
    cold = CachedEmbedder(stand_in, EmbeddingCache(paths.cache))
    seconds["cache cold"], _ = timed(lambda: cold.embed(texts))
    cold_counts = (cold.texts_embedded, cold.cache_hits)
    cold.cache.close()
    model_seconds = stand_in.seconds

    warm_counts: list[tuple[int, int]] = []

    def warm_pass() -> None:
        embedder = CachedEmbedder(stand_in, EmbeddingCache(paths.cache))
        embedder.embed(texts)
        warm_counts.append((embedder.texts_embedded, embedder.cache_hits))
        embedder.cache.close()

    seconds["cache warm"], _ = median_time(repeats, warm_pass)

    store = make_store(engine, paths.vectors)
    embedder = CachedEmbedder(stand_in, EmbeddingCache(paths.cache))
    seconds["upsert"], dense = timed(
        lambda: build_indexes(chunk_set, embedder, store, keyword_folder=paths.keyword, retrievers=DENSE_SIDE)
    )
    seconds["bm25 build"], keyword = timed(
        lambda: build_indexes(
            chunk_set, embedder, store, keyword_folder=paths.keyword, retrievers=KEYWORD_SIDE
        )
    )
    warm_dense: list[tuple[int, bool]] = []
    warm_keyword: list[bool] = []

    def warm_knn() -> None:
        built = build_indexes(chunk_set, embedder, store, keyword_folder=paths.keyword, retrievers=DENSE_SIDE)
        warm_dense.append((built.n_points, built.dense_built))

    def warm_bm25() -> None:
        built = build_indexes(
            chunk_set, embedder, store, keyword_folder=paths.keyword, retrievers=KEYWORD_SIDE
        )
        warm_keyword.append(built.keyword_built)

    seconds["warm build knn"], _ = median_time(repeats, warm_knn)
    seconds["warm build bm25"], _ = median_time(repeats, warm_bm25)
    embedder.cache.close()
    close_store(store)

    partition = {"chunk_config": config.name}

    def write_tables() -> None:
        paths.warehouse.write_table(corpus_to_frame(corpus), "corpus", NO_PARTITION, RUN_ID)
        paths.warehouse.write_table(chunks_to_frame(chunk_set.chunks), "chunks", partition, RUN_ID)
        paths.warehouse.write_table(questions_to_frame(dataset), "eval_questions", NO_PARTITION, RUN_ID)

    seconds["parquet build"], _ = median_time(repeats, write_tables)
    return {
        "n_chunks": len(chunk_set.chunks),
        "n_distinct": len(set(texts)),
        "n_documents": len(corpus),
        "n_characters": corpus.total_characters,
        "mean_chunk_chars": sum(map(len, texts)) / max(1, len(texts)),
        "synth_seconds": synth_seconds,
        "model_seconds": model_seconds,
        "cold_counts": cold_counts,
        "warm_counts": warm_counts,
        "points_written": dense.n_points,
        "keyword_built": keyword.keyword_built,
        "warm_dense": warm_dense,
        "warm_keyword": warm_keyword,
        "vectors_bytes": folder_bytes(paths.vectors),
        "cache_bytes": folder_bytes(paths.cache.parent),
        "seconds": seconds,
        "peak_rss": peak_rss_bytes(),
    }


# -- the query process (retrieval_results, retrieval_metrics) ------------------------------------------


def query_process(n_questions: int, repeats: int, engine: str, folder: Path) -> dict[str, Any]:
    paths = Paths(folder)
    config = chunk_config()
    chosen = profiles()
    seconds: dict[str, float] = {}
    rss: dict[str, int] = {"start": current_rss_bytes()}
    partition = {"chunk_config": config.name}

    def read_tables() -> tuple[Corpus, ChunkSet, TokenLevelDataset]:
        def table(name: str, part: Mapping[str, str] = NO_PARTITION) -> pd.DataFrame:
            frame = paths.warehouse.read_current(name, part)
            assert frame is not None, name
            return frame

        chunks = ChunkSet(config.name, tuple(chunks_from_frame(table("chunks", partition))))
        return corpus_from_frame(table("corpus")), chunks, questions_from_frame(table("eval_questions"))

    seconds["read tables"], (corpus, chunk_set, dataset) = timed(read_tables)
    dataset = TokenLevelDataset(dataset.examples[:n_questions], name=dataset.name)
    stand_in = StandInEmbedder()
    embedder = CachedEmbedder(stand_in, EmbeddingCache(paths.cache))
    store = make_store(engine, paths.vectors)
    rss["before open"] = current_rss_bytes()
    seconds["open keyword"], indexes = timed(
        lambda: open_indexes(chunk_set, embedder, store, keyword_folder=paths.keyword)
    )
    rss["keyword open"] = current_rss_bytes()
    with ExitStack() as stack:
        seconds["open dense"], _ = timed(lambda: stack.enter_context(store.session(indexes.collection)))
        rss["dense open"] = current_rss_bytes()
        queries = [Query(e.question_id, e.query) for e in dataset]
        seconds["queries cold"], _ = timed(lambda: embedder.embed([q.text for q in queries]))

        batch: dict[str, dict[str, Any]] = {}
        runs: dict[str, RetrievalRun] = {}
        for profile in chosen:
            total, run = median_time(repeats, partial(retrieve, profile, indexes, queries))
            runs[profile.name] = run
            result_seconds, result = median_time(
                repeats,
                partial(
                    token_level_result, dataset.examples, run.hits, chunk_set.chunks, profile.top_k, corpus
                ),
            )
            part = {**partition, "profile": profile.name}
            parquet_seconds, _ = median_time(
                repeats, partial(write_results, paths.warehouse, part, run, result)
            )
            batch[profile.name] = {
                "seconds": total,
                "stages": dict(run.seconds),
                "metrics_seconds": result_seconds,
                "parquet_seconds": parquet_seconds,
                "span_recall": result.metrics["span_recall"].mean,
                "mrr": result.metrics["mrr"].mean,
            }
        rss["pipeline peak"] = peak_rss_bytes()

        # numpy's exact search on the same vectors, in this process (after the pipeline's work, so its
        # matrix is not in the pipeline's peak)
        matrix = embedder.embed([c.text for c in chunk_set.chunks])
        query_vectors = embedder.embed([q.text for q in queries])
        depths = sorted({p.candidate_depth for p in chosen if "knn" in p.retrievers})
        latency: dict[str, list[list[float]]] = {}

        def record(key: str, i: int, value: float) -> None:
            latency.setdefault(key, [[] for _ in queries])[i].append(value)

        # one BLAS thread: on a loaded 2-core machine, OpenBLAS's two threads made one M @ q up to 15x slower
        with one_blas_thread():
            for _ in range(max(1, repeats)):
                for i, query in enumerate(queries):
                    for profile in chosen:
                        elapsed, run = timed(partial(retrieve, profile, indexes, [query]))
                        record(f"{profile.name} e2e", i, elapsed)
                        for stage in ("knn", "bm25"):
                            if stage in run.seconds:
                                record(f"{profile.name} {stage}", i, run.seconds[stage])
                    for depth in depths:
                        elapsed, _ = timed(partial(numpy_top_k, matrix, query_vectors[i], depth))
                        record(f"numpy top-{depth}", i, elapsed)
        tops = {depth: [numpy_top_k(matrix, v, depth) for v in query_vectors] for depth in depths}
    close_store(store)
    embedder.cache.close()
    agreement = {}
    for profile in chosen:
        if "knn" not in profile.retrievers:
            continue
        same = 0
        for query, top in zip(queries, tops[profile.candidate_depth], strict=True):
            exact = {chunk_set.chunks[j].chunk_id for j in top}
            found = {h.chunk_id for h in runs[profile.name].hits[query.question_id] if h.knn_rank is not None}
            same += found == exact if not profile.is_fused else found <= exact
        agreement[profile.name] = same
    medians = {key: [median(values) for values in per_query] for key, per_query in latency.items()}
    return {
        "n_questions": len(queries),
        "seconds": seconds,
        "rss": {**rss, "final peak": peak_rss_bytes()},
        "batch": batch,
        "latency": {key: percentiles(values) for key, values in medians.items()},
        "agreement": agreement,
        "depths": depths,
    }


def write_results(
    warehouse: Warehouse, partition: Mapping[str, str], run: RetrievalRun, result: EvaluationResult
) -> None:
    """The ``retrieval_results`` and ``retrieval_metrics`` tables of one profile, as the assets write them."""
    warehouse.write_table(retrieved_to_frame(run.hits, run.traces), "retrieval_results", partition, RUN_ID)
    per_question = pd.DataFrame(
        [{"question_id": r.question_id, "group": r.group, **r.metrics} for r in result.raw_results]
    )
    warehouse.write_table(per_question, "retrieval_metrics", partition, RUN_ID)


# -- the parent: one pair of child processes per size, then the report ---------------------------------


def run_child(
    kind: str, size: int, n_questions: int, repeats: int, engine: str, folder: Path
) -> dict[str, Any]:
    """Run one stage in a new Python process; its last line of output is the figures as JSON."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        kind,
        "--sizes",
        str(size),
        "--questions",
        str(n_questions),
        "--repeats",
        str(repeats),
        "--engine",
        engine,
        "--dir",
        str(folder),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} process for {size:,} chunks failed:\n{done.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall"] = wall
    return figures


def machine_facts() -> str:
    return (
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.system()} {platform.release()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}" if seconds < 0.1 else f"{seconds * 1000:.0f}"


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB"


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}" if seconds > 0 else "inf"


def print_size(
    build: Mapping[str, Any], query: Mapping[str, Any], engine: str, repeats: int, out: TextIO
) -> None:
    def say(label: str, text: str) -> None:
        print(f"{label:<12}{text}", file=out, flush=True)

    s, q = build["seconds"], query["seconds"]
    n, n_q = build["n_chunks"], query["n_questions"]
    print(
        f"\n== {n:,} chunks ({CHUNK_CONFIG}: {build['n_documents']:,} documents, {build['n_characters']:,} "
        f"characters, mean chunk {build['mean_chunk_chars']:.0f} chars; {n_q:,} questions; {engine}) ==",
        file=out,
    )
    say("corpus", f"synthesized in {build['synth_seconds']:.1f} s (not a pipeline stage, not timed below)")
    say("chunking", f"cut_corpus {s['chunking']:.3f} s: {_rate(n, s['chunking'])} chunks/s")
    embedded, hits = build["cold_counts"]
    say(
        "cache",
        f"cold {s['cache cold']:.2f} s ({embedded:,} embedded, {hits:,} hits; stand-in model "
        f"{build['model_seconds']:.2f} s, cache {s['cache cold'] - build['model_seconds']:.2f} s)",
    )
    warm_ok = all(counts == [0, n] or counts == (0, n) for counts in build["warm_counts"])
    say(
        "",
        f"warm {s['cache warm']:.2f} s: {_rate(n, s['cache warm'])} passages/s ("
        + ("0 embedded, all hits" if warm_ok else f"WARNING: {build['warm_counts']}")
        + f"); cache file {_mib(build['cache_bytes'])}",
    )
    say(
        "upsert",
        f"build_indexes cold, knn side {s['upsert']:.2f} s ({build['points_written']:,} points written; "
        f"{_rate(n, s['upsert'])} points/s; store on disk {_mib(build['vectors_bytes'])})",
    )
    say("", f"bm25 side {s['bm25 build']:.2f} s (built and saved: {build['keyword_built']})")
    warm_written = {points for points, _ in build["warm_dense"]}
    say(
        "warm build",
        f"build_indexes, fingerprint match: knn side {s['warm build knn']:.3f} s ("
        + (
            "0 points written"
            if warm_written == {0} and not any(b for _, b in build["warm_dense"])
            else f"WARNING: {build['warm_dense']}"
        )
        + f"), bm25 side {s['warm build bm25']:.3f} s ("
        + ("loaded, not rebuilt" if not any(build["warm_keyword"]) else "WARNING: rebuilt")
        + ")",
    )
    say(
        "parquet",
        f"corpus + chunks + eval_questions {s['parquet build']:.2f} s (frames and Warehouse.write_table)",
    )
    say("memory", f"build process peak RSS {_mib(build['peak_rss'])}")
    rss = query["rss"]
    say(
        "open",
        f"new process {query['wall']:.1f} s in all; tables read {q['read tables']:.2f} s; open_indexes (bm25 "
        f"loaded) {q['open keyword']:.2f} s, +{_mib(rss['keyword open'] - rss['before open'])}; "
        f"collection opened {q['open dense']:.2f} s, +{_mib(rss['dense open'] - rss['keyword open'])}",
    )
    say("queries", f"{n_q:,} embedded cold in {q['queries cold']:.2f} s (stand-in + cache)")
    for name, figures in query["batch"].items():
        stages = ", ".join(f"{k} {v:.3f}" for k, v in figures["stages"].items() if v >= 0.0005)
        say(
            "batch" if name == PROFILE_NAMES[0] else "",
            f"{name:<13} retrieve({n_q:,}) {figures['seconds']:.2f} s: {_rate(n_q, figures['seconds'])} q/s "
            f"({stages}); metrics {figures['metrics_seconds']:.3f} s; parquet {figures['parquet_seconds']:.3f} s; "
            f"span_recall {figures['span_recall']:.3f}, mrr {figures['mrr']:.3f}",
        )
    lat = query["latency"]
    say("latency", f"per query, ms p50 / p95 (median of {repeats} interleaved passes per query)")
    for name in PROFILE_NAMES:
        parts = [f"e2e {_ms(lat[name + ' e2e'][0])} / {_ms(lat[name + ' e2e'][1])}"]
        for stage in ("knn", "bm25"):
            key = f"{name} {stage}"
            if key in lat:
                parts.append(f"{stage} {_ms(lat[key][0])} / {_ms(lat[key][1])}")
        (profile,) = [p for p in profiles() if p.name == name]
        if "knn" in profile.retrievers:
            depth = profile.candidate_depth
            exact = lat[f"numpy top-{depth}"]
            parts.append(f"numpy top-{depth} (1 BLAS thread) {_ms(exact[0])} / {_ms(exact[1])}")
            parts.append(f"knn/numpy {lat[name + ' knn'][0] / exact[0]:.2f}x (p50)")
            relation = "same top-5 as numpy" if not profile.is_fused else f"knn hits in numpy's top-{depth}"
            parts.append(f"{relation} {query['agreement'][name]}/{n_q}")
        say("", f"{name:<13} " + "; ".join(parts))
    say(
        "memory",
        f"query process peak RSS {_mib(rss['pipeline peak'])} (the pipeline's work), "
        f"{_mib(rss['final peak'])} with numpy's matrix",
    )


def stage_figures(build: Mapping[str, Any], query: Mapping[str, Any]) -> dict[str, float]:
    """The figures whose growth is reported, by stage (seconds, or bytes for RSS)."""
    s, q, lat = build["seconds"], query["seconds"], query["latency"]
    figures = {
        "chunking s": s["chunking"],
        "cache cold s": s["cache cold"],
        "cache warm s": s["cache warm"],
        "upsert s": s["upsert"],
        "bm25 build s": s["bm25 build"],
        "warm build knn s": s["warm build knn"],
        "warm build bm25 s": s["warm build bm25"],
        "parquet build s": s["parquet build"],
        "open bm25 s": q["open keyword"],
        "open dense s": q["open dense"],
        "dense knn p50 ms": lat["dense-top5 knn"][0] * 1000,
        "numpy top-5 p50 ms": lat["numpy top-5"][0] * 1000,
        "hybrid e2e p50 ms": lat["hybrid-top5 e2e"][0] * 1000,
        "keyword e2e p50 ms": lat["keyword-top5 e2e"][0] * 1000,
        "metrics s": sum(b["metrics_seconds"] for b in query["batch"].values()),
        "parquet results s": sum(b["parquet_seconds"] for b in query["batch"].values()),
        "build peak RSS MiB": build["peak_rss"] / 2**20,
        "query peak RSS MiB": query["rss"]["pipeline peak"] / 2**20,
    }
    return figures


def exponent(n1: int, t1: float, n2: int, t2: float) -> float | None:
    if t1 <= 0 or t2 <= 0 or n1 == n2:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


def print_growth(results: Sequence[tuple[int, dict[str, float]]], out: TextIO) -> None:
    sizes = [n for n, _ in results]
    pairs = list(itertools.pairwise(results))
    if len(results) > 2:
        pairs.append((results[0], results[-1]))
    heads = [f"{a:,}->{b:,}" for (a, _), (b, _) in pairs]
    print("\ngrowth exponent per stage: log(t2/t1) / log(n2/n1); 1.0 = linear, 0 = flat", file=out)
    print(
        f"{'stage':<20}" + "".join(f"{n:>11,}" for n in sizes) + "".join(f"{h:>18}" for h in heads), file=out
    )
    for stage in results[0][1]:
        row = f"{stage:<20}" + "".join(f"{figures[stage]:>11.3f}" for _, figures in results)
        for (n1, f1), (n2, f2) in pairs:
            value = exponent(n1, f1[stage], n2, f2[stage])
            row += f"{'-' if value is None else f'{value:.2f}':>18}"
        print(row, file=out)


def print_goals(size: int, build: Mapping[str, Any], query: Mapping[str, Any], out: TextIO) -> list[bool]:
    lat = query["latency"]
    knn, exact, e2e = lat["dense-top5 knn"][0], lat["numpy top-5"][0], lat["dense-top5 e2e"][0]
    ratio = knn / exact
    warm = build["seconds"]["warm build knn"]
    peak = max(build["peak_rss"], query["rss"]["pipeline peak"])
    where = "" if size == GOAL_SIZE else f" (goals are set at {GOAL_SIZE:,}; this run's largest size)"
    print(f"\ngoals at {size:,} chunks{where}", file=out)
    rows = [
        (
            f"dense retrieval within {GOAL_DENSE_RATIO:g}x of numpy exact",
            f"knn p50 {_ms(knn)} ms vs numpy top-5 p50 (1 BLAS thread) {_ms(exact)} ms: {ratio:.2f}x (retrieve e2e "
            f"{_ms(e2e)} ms: {e2e / exact:.2f}x)",
            ratio <= GOAL_DENSE_RATIO,
        ),
        (
            f"warm run's vector-store work <= {GOAL_WARM_SECONDS:g} s",
            f"build_indexes warm, knn side {warm:.3f} s (0 points written); "
            f"opening the collection in a new process {query['seconds']['open dense']:.2f} s",
            warm <= GOAL_WARM_SECONDS,
        ),
        (
            f"peak RSS <= {GOAL_PEAK_RSS / 1e9:g} GB",
            f"{peak / 1e9:.2f} GB (build process {build['peak_rss'] / 1e9:.2f} GB, query process "
            f"{query['rss']['pipeline peak'] / 1e9:.2f} GB)",
            peak <= GOAL_PEAK_RSS,
        ),
    ]
    for goal, figure, met in rows:
        print(f"{goal:<44}{figure:<100} {'met' if met else 'NOT met'}", file=out)
    return [met for _, _, met in rows]


def run(
    sizes: Sequence[int], n_questions: int, repeats: int, engine: str, root: Path, out: TextIO
) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """Every size in its own pair of child processes, printed as it finishes; then growth and goals."""
    print(machine_facts(), file=out)
    if engine == "edge" and (missing := edge_missing()) is not None:
        print(f"engine: edge is not available ({missing}); falling back to qdrant-local", file=out)
        engine = "qdrant-local"
    print(
        f"engine: {engine}; chunk config {CHUNK_CONFIG}; profiles {', '.join(PROFILE_NAMES)}; stand-in "
        f"embedder {StandInEmbedder().model_id}; sizes {', '.join(f'{n:,}' for n in sizes)}; {n_questions:,} "
        f"questions; medians of {repeats}; files under {root}",
        file=out,
        flush=True,
    )
    results = []
    for size in sizes:
        folder = root / f"size-{size}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            build = run_child("build", size, n_questions, repeats, engine, folder)
            query = run_child("query", size, n_questions, repeats, engine, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print_size(build, query, engine, repeats, out)
        results.append((size, build, query))
    print_growth([(b["n_chunks"], stage_figures(b, q)) for _, b, q in results], out)
    size, build, query = results[-1]
    print_goals(build["n_chunks"], build, query, out)
    out.flush()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--sizes",
        default=None,
        help=f"chunks per size, comma separated (default {','.join(map(str, DEFAULT_SIZES))})",
    )
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="medians of this many runs of each warm stage")
    parser.add_argument("--engine", choices=ENGINES, default="edge")
    parser.add_argument(
        "--quick", action="store_true", help=f"sizes {QUICK_SIZES}, {QUICK_QUESTIONS} questions"
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to build (a temporary folder by default)"
    )
    parser.add_argument("--child", choices=("build", "query"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    default_sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else list(default_sizes)
    n_questions = min(args.questions, QUICK_QUESTIONS) if args.quick else args.questions
    if args.child is not None:
        if args.child == "build":
            figures = build_process(sizes[0], n_questions, args.repeats, args.engine, args.dir)
        else:
            figures = query_process(n_questions, args.repeats, args.engine, args.dir)
        print(json.dumps(figures))
        return 0
    if args.dir is not None:
        run(sizes, n_questions, args.repeats, args.engine, args.dir, sys.stdout)
        return 0
    with tempfile.TemporaryDirectory(prefix="rag-eval-scale-") as tmp:
        run(sizes, n_questions, args.repeats, args.engine, Path(tmp), sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
