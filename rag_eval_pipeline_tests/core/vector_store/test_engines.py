"""The engine choice (edge embedded by default, qdrant-client local or against a server), the move of a
project's qdrant-client local collections to edge without re-embedding, and both engines' hits on the
bundled demo data with the real MiniLM."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.retrieval.indexes import build_indexes
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline.core.vector_store.engines import open_vector_store
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
from rag_eval_pipeline_tests.core.retrieval.test_indexes import QUESTIONS, cached, chunk_set

REPO = Path(__file__).resolve().parents[3]


def test_the_embedded_default_is_edge_and_a_url_means_a_server(tmp_path: Path):
    assert isinstance(open_vector_store(path=tmp_path), EdgeVectorStore)
    local = open_vector_store("qdrant-local", path=tmp_path)
    assert isinstance(local, QdrantVectorStore) and local.path == tmp_path
    server = open_vector_store("edge", path=tmp_path, url="http://127.0.0.1:6333", api_key="k")
    assert isinstance(server, QdrantVectorStore) and server.url == "http://127.0.0.1:6333"
    with pytest.raises(ConfigError, match="unknown vector engine 'faiss' .*RAG_EVAL_VECTOR_ENGINE"):
        open_vector_store("faiss", path=tmp_path)
    with pytest.raises(ValueError, match="needs a folder"):
        open_vector_store()
    assert not list(tmp_path.iterdir())


def test_collections_of_qdrant_client_local_mode_are_rebuilt_on_edge_from_the_embedding_cache(tmp_path: Path):
    """A project indexed before edge was the default: its data/qdrant/<collection> folders hold
    qdrant-client local-mode collections. The default store builds its own from the embedding cache:
    nothing is embedded again, and it answers like the old collection."""
    folder = tmp_path / "data" / "qdrant"
    cut = chunk_set()
    old_store = QdrantVectorStore(path=folder)
    old = build_indexes(cut, cached(tmp_path), old_store, retrievers=("knn",))
    assert old.embedding.texts_embedded > 0

    said: list[str] = []
    default = open_vector_store(path=folder, log=said.append)
    assert isinstance(default, EdgeVectorStore)
    moved = build_indexes(cut, cached(tmp_path), default, retrievers=("knn",))
    assert moved.embedding.texts_embedded == 0 and moved.embedding.cache_hits > 0
    assert moved.dense_built and moved.n_points == default.count(moved.collection) == len(cut.chunks)
    kept = folder / moved.collection
    assert (kept / "edge").is_dir() and (kept / "meta.json").exists()  # the old collection is kept
    assert [line for line in said if "qdrant-client's local mode" in line] != []
    queries = cached(tmp_path).embed(QUESTIONS)
    new_hits, old_hits = (
        default.search(moved.collection, queries, 3),
        old_store.search(old.collection, queries, 3),
    )
    assert [[(h.chunk_id, h.text) for h in row] for row in new_hits] == [
        [(h.chunk_id, h.text) for h in row] for row in old_hits
    ]
    new_scores = np.array([[h.score for h in row] for row in new_hits])
    assert np.abs(new_scores - np.array([[h.score for h in row] for row in old_hits])).max() < 1e-5
    again = build_indexes(cut, cached(tmp_path), default, retrievers=("knn",))
    assert not again.dense_built and again.n_points == 0


def test_an_edited_chunk_set_writes_only_the_changed_points(tmp_path: Path):
    store = open_vector_store(path=tmp_path / "q")
    cut = chunk_set(60)
    first = build_indexes(cut, cached(tmp_path), store, collection="c", retrievers=("knn",))
    last = cut.chunks[-1]
    edited = replace(cut, chunks=(*cut.chunks[:-1], replace(last, text=last.text.upper())))
    second = build_indexes(edited, cached(tmp_path), store, collection="c", retrievers=("knn",))
    assert first.n_points == len(cut.chunks) and second.n_points == 1 and second.dense_built
    assert second.embedding.texts_embedded == 1


def _demo_data() -> tuple[object, list[str]]:
    from rag_eval_pipeline.core.corpus.corpus import Corpus

    corpus = Corpus.from_folder(REPO / "data" / "corpus")
    lines = (REPO / "data" / "datasets" / "golden_token_level.jsonl").read_text(encoding="utf-8").splitlines()
    return corpus, [json.loads(line)["inputs"]["query"] for line in lines if line.strip()]


@pytest.mark.slow
def test_edge_and_qdrant_client_local_return_the_same_hits_on_the_demo_data(tmp_path: Path, minilm: object):
    """No Qdrant server can run here, so qdrant-client's local mode stands in for it (the same client
    code as against a server): identical chunk ids per query, in order, scores within 1e-5."""
    from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
    from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
    from rag_eval_pipeline.core.settings.configs import load_chunk_configs

    corpus, questions = _demo_data()
    embedder = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "embeddings.sqlite"))  # type: ignore[arg-type]
    configs = {c.name: c for c in load_chunk_configs(REPO / "data" / "chunk_configs.yaml")}
    queries = embedder.embed(questions)
    assert len(questions) >= 20
    for name in ("fixed-200-0", "recursive-400-50"):
        cut = cut_corpus(build_chunker(configs[name]), corpus, name)  # type: ignore[arg-type]
        edge, local = EdgeVectorStore(tmp_path / "edge"), QdrantVectorStore(path=tmp_path / "local")
        built = [build_indexes(cut, embedder, s, retrievers=("knn",)) for s in (edge, local)]
        edge_hits = edge.search(built[0].collection, queries, 10)
        local_hits = local.search(built[1].collection, queries, 10)
        assert [[h.chunk_id for h in row] for row in edge_hits] == [
            [h.chunk_id for h in row] for row in local_hits
        ]
        scores = np.array([[h.score for h in row] for row in edge_hits])
        assert np.abs(scores - np.array([[h.score for h in row] for row in local_hits])).max() < 1e-5
