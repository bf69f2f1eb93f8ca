"""The embedded vector engines on the bundled demo data: qdrant-edge (the default) next to qdrant-client's
local mode, same chunks, same real MiniLM vectors (embedded once, through an embedding cache in a
temporary folder).

For each engine, medians of ``--repeats`` interleaved runs: writing a new collection, an update with
nothing changed, one edited chunk, opening the collection in a fresh store (the first search), and a
batch of every golden question (top 10). Then whether both engines return the same hits, and the recall
of edge's HNSW option against its exact search. Figures only: the 10k-100k scale is benchmarks/scale.py.

    .venv/bin/python benchmarks/vector_engines.py [--repeats 5] [--chunk-config recursive-400-50] [--data DIR]

``--data DIR``: another folder laid out like data/ (corpus/, chunk_configs.yaml,
datasets/golden_token_level.jsonl); the tests' smoke run uses a tiny one with a cheap embedder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag_eval_pipeline.core.chunking import ChunkSet, build_chunker, cut_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.embedding.base import Embedder, Vectors
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.embedding.local import local_embedder
from rag_eval_pipeline.core.settings.configs import load_chunk_configs
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore

REPO = Path(__file__).resolve().parents[1]
ENGINES: dict[str, Callable[[Path], EdgeVectorStore | QdrantVectorStore]] = {
    "edge": lambda folder: EdgeVectorStore(folder),
    "qdrant-local": lambda folder: QdrantVectorStore(path=folder),
}


def machine_facts() -> str:
    from importlib.metadata import version

    return (
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, qdrant-edge-py "
        f"{version('qdrant-edge-py')}, qdrant-client {version('qdrant-client')}, "
        f"{platform.system()} {platform.release()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def timed(call: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def demo_data(
    chunk_config: str, cache: Path, data: Path = REPO / "data", model: Embedder | None = None
) -> tuple[ChunkSet, Vectors, Vectors]:
    corpus = Corpus.from_folder(data / "corpus")
    config = {c.name: c for c in load_chunk_configs(data / "chunk_configs.yaml")}[chunk_config]
    cut = cut_corpus(build_chunker(config), corpus, chunk_config)
    lines = (data / "datasets" / "golden_token_level.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["inputs"]["query"] for line in lines if line.strip()]
    embedder = CachedEmbedder(model or local_embedder(), EmbeddingCache(cache))
    return cut, embedder.embed([c.text for c in cut.chunks]), embedder.embed(questions)


def run(
    chunk_config: str,
    repeats: int,
    folder: Path,
    data: Path = REPO / "data",
    embedder: Embedder | None = None,
) -> None:
    print(machine_facts())
    cut, vectors, queries = demo_data(chunk_config, folder / "embeddings.sqlite", data, embedder)
    chunks = list(cut.chunks)
    edited = [replace(chunks[0], text=chunks[0].text.upper()), *chunks[1:]]
    edited_vectors = vectors.copy()
    edited_vectors[0] = -edited_vectors[0]
    print(
        f"data: {chunk_config}, {len(chunks)} chunks of "
        f"{'the bundled corpus' if data == REPO / 'data' else data}, {len(queries)} golden questions, "
        f"{'MiniLM' if embedder is None else embedder.model_id} {vectors.shape[1]} dimensions; "
        f"medians of {repeats} interleaved runs"
    )
    stages = ("write", "unchanged", "one edited", "open", "query")
    times: dict[str, dict[str, list[float]]] = {e: {s: [] for s in stages} for e in ENGINES}
    written: dict[str, list[int]] = {e: [] for e in ENGINES}
    hits: dict[str, object] = {}
    for repeat in range(repeats):
        for engine, make in ENGINES.items():
            where = folder / f"{engine}-{repeat}"
            store = make(where)
            seconds, _ = timed(
                lambda store=store: store.replace_collection("c", chunks, vectors, chunk_config, "fp")
            )
            times[engine]["write"].append(seconds)
            seconds, n = timed(
                lambda store=store: store.replace_collection("c", chunks, vectors, chunk_config, "fp")
            )
            times[engine]["unchanged"].append(seconds)
            seconds, m = timed(
                lambda store=store: store.replace_collection("c", edited, edited_vectors, chunk_config, "fp2")
            )
            times[engine]["one edited"].append(seconds)
            written[engine] += [int(n), int(m)]  # type: ignore[call-overload]
            store.replace_collection("c", chunks, vectors, chunk_config, "fp")
            fresh = make(where)  # a later process: the first search opens the collection
            with_open, _ = timed(lambda fresh=fresh: fresh.search("c", queries[:1], 10))
            times[engine]["open"].append(with_open)
            with fresh.session("c"):
                seconds, hits[engine] = timed(lambda fresh=fresh: fresh.search("c", queries, 10))
            times[engine]["query"].append(seconds / len(queries))
            shutil.rmtree(where)
    for stage in stages:
        line = "  ".join(
            f"{engine} {statistics.median(times[engine][stage]) * 1000:9.2f} ms" for engine in ENGINES
        )
        ratio = statistics.median(times["qdrant-local"][stage]) / statistics.median(times["edge"][stage])
        unit = " a query (batch of all)" if stage == "query" else ""
        print(f"{stage:<11}{unit:<24} {line}   qdrant-local/edge {ratio:6.1f}x")
    print(
        "points written by an update: unchanged "
        + ", ".join(f"{e} {written[e][0]}" for e in ENGINES)
        + "; one edited chunk "
        + ", ".join(f"{e} {written[e][1]}" for e in ENGINES)
    )
    edge_hits, local_hits = hits["edge"], hits["qdrant-local"]
    same_ids = [[h.chunk_id for h in row] for row in edge_hits] == [  # type: ignore[attr-defined]
        [h.chunk_id for h in row]
        for row in local_hits  # type: ignore[attr-defined]
    ]
    gap = max(
        abs(a.score - b.score)
        for ra, rb in zip(edge_hits, local_hits, strict=True)  # type: ignore[call-overload]
        for a, b in zip(ra, rb, strict=True)
    )
    print(f"same hits, edge vs qdrant-local: {same_ids}, largest score difference {gap:.2e}")
    recall(chunks, vectors, queries, chunk_config, folder)


def recall(
    chunks: Sequence[object], vectors: Vectors, queries: Vectors, chunk_config: str, folder: Path
) -> None:
    exact = EdgeVectorStore(folder / "exact")
    approximate = EdgeVectorStore(folder / "hnsw", exact=False)
    for store in (exact, approximate):
        store.replace_collection("c", chunks, vectors, chunk_config)  # type: ignore[arg-type]
    for k in (5, 10, 20):
        truth = exact.search("c", queries, k)
        found = approximate.search("c", queries, k)
        overlap = np.mean(
            [
                len({h.chunk_id for h in a} & {h.chunk_id for h in b}) / k
                for a, b in zip(truth, found, strict=True)
            ]
        )
        print(f"edge HNSW (exact=False) recall@{k} against exact search: {overlap:.3f}")


def main(argv: Sequence[str] | None = None, embedder: Embedder | None = None) -> int:
    """``embedder``: the real MiniLM unless given (the tests' smoke run passes a cheap one)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk-config", default="recursive-400-50")
    parser.add_argument("--data", type=Path, default=REPO / "data", help="a folder laid out like data/")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vector-engines-") as folder:
        run(args.chunk_config, args.repeats, Path(folder), args.data.resolve(), embedder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
