"""Step 2 of an evaluation: building a chunk set's indexes, and opening them again without re-embedding.
Real local Qdrant and bm25s; the hashing embedder behind the real on-disk embedding cache."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from rag_eval_pipeline.core.chunking import ChunkSet, FixedSizeChunker, cut_corpus
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache, EmbeddingCounts
from rag_eval_pipeline.core.retrieval.indexes import (
    ChunkIndexes,
    build_indexes,
    collection_fingerprint,
    open_indexes,
)
from rag_eval_pipeline.core.retrieval.keyword import chunk_set_fingerprint
from rag_eval_pipeline.core.vector_store.base import collection_name
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
from rag_eval_pipeline_tests.conftest import TINY_QUESTIONS, tiny_corpus
from rag_eval_pipeline_tests.fakes import HashingEmbedder

QUESTIONS = [text for _, text, _ in TINY_QUESTIONS]


def chunk_set(size: int = 60) -> ChunkSet:
    return cut_corpus(FixedSizeChunker(size, 0), tiny_corpus(), f"fixed-{size}")  # type: ignore[arg-type]


def cached(tmp_path: Path) -> CachedEmbedder:
    return CachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "embeddings.sqlite"))


def search_both(indexes: ChunkIndexes) -> tuple[object, object]:
    assert indexes.dense is not None and indexes.keyword is not None
    vectors = indexes.dense.embedder.embed(QUESTIONS)
    return indexes.dense.store.search(indexes.collection, vectors, 3), indexes.keyword.search(QUESTIONS, 3)


def test_build_indexes_fills_the_named_collection_and_counts_what_it_embedded(tmp_path: Path):
    cut = chunk_set()
    store = QdrantVectorStore(path=tmp_path / "qdrant")
    first = build_indexes(cut, cached(tmp_path), store)
    assert first.collection == collection_name("fixed-60", "test:hashing-bow")
    assert first.n_points == store.count(first.collection) == len(cut.chunks)
    distinct = len({c.text for c in cut.chunks})
    assert first.embedding == EmbeddingCounts(texts_embedded=distinct, cache_hits=0)
    assert first.keyword is not None and first.keyword_built and first.keyword.chunks == cut.chunks
    assert first.keyword_fingerprint == chunk_set_fingerprint(cut.chunks)
    assert first.dense_built
    # a second build finds the collection made from exactly these chunks: nothing embedded or written
    again = build_indexes(cut, cached(tmp_path), store)
    assert again.embedding == EmbeddingCounts() and again.n_points == 0 and not again.dense_built
    assert search_both(again) == search_both(first)


def test_the_collection_is_rewritten_when_its_chunks_or_embedder_changed_or_it_was_never_completed(
    tmp_path: Path,
):
    store = QdrantVectorStore(path=tmp_path / "qdrant")
    cut = chunk_set()
    name = "fixed"
    build_indexes(cut, cached(tmp_path), store, collection=name)
    assert store.fingerprint(name) == collection_fingerprint(cut, "test:hashing-bow")
    edited = ChunkSet(cut.name, (replace(cut.chunks[0], text=cut.chunks[0].text.upper()), *cut.chunks[1:]))
    assert collection_fingerprint(edited, "test:hashing-bow") != store.fingerprint(name)
    rebuilt = build_indexes(edited, cached(tmp_path), store, collection=name)
    assert rebuilt.dense_built and rebuilt.embedding.texts_embedded == 1  # the one changed text
    assert collection_fingerprint(cut, "other-model") != collection_fingerprint(cut, "test:hashing-bow")
    # written without a fingerprint (or cut short before it was set): rebuilt, then complete
    store.replace_collection(name, cut.chunks, cached(tmp_path).embed([c.text for c in cut.chunks]), cut.name)
    assert store.fingerprint(name) is None
    assert build_indexes(cut, cached(tmp_path), store, collection=name).dense_built
    assert not build_indexes(cut, cached(tmp_path), store, collection=name).dense_built
    assert store.fingerprint("no-such-collection") is None


def test_a_saved_keyword_index_is_reused_until_the_chunks_change(tmp_path: Path):
    store = QdrantVectorStore(path=tmp_path / "qdrant")
    folder = tmp_path / "bm25" / "fixed-60"
    first = build_indexes(chunk_set(), cached(tmp_path), store, keyword_folder=folder)
    reused = build_indexes(chunk_set(), cached(tmp_path), store, keyword_folder=folder)
    changed = build_indexes(chunk_set(50), cached(tmp_path), store, keyword_folder=folder)
    assert (first.keyword_built, reused.keyword_built, changed.keyword_built) == (True, False, True)
    assert reused.keyword is not None and first.keyword is not None
    assert reused.keyword.fingerprint == first.keyword.fingerprint
    assert changed.keyword is not None and changed.keyword.chunks == chunk_set(50).chunks


def test_only_the_asked_sides_are_built(tmp_path: Path):
    keyword_only = build_indexes(
        chunk_set(), cached(tmp_path), QdrantVectorStore(path=tmp_path / "kw"), retrievers=("bm25",)
    )
    assert keyword_only.dense is None and keyword_only.collection == "" and keyword_only.n_points == 0
    assert keyword_only.embedding == EmbeddingCounts() and keyword_only.keyword is not None
    assert not (tmp_path / "kw").exists()  # the vector store was never touched
    dense_only = build_indexes(
        chunk_set(), cached(tmp_path), QdrantVectorStore(path=tmp_path / "d"), retrievers=("knn",)
    )
    assert (
        dense_only.keyword is None and not dense_only.keyword_built and dense_only.keyword_fingerprint == ""
    )
    assert dense_only.dense is not None


def test_an_embedder_without_a_cache_reports_no_counts(tmp_path: Path):
    built = build_indexes(chunk_set(), HashingEmbedder(), QdrantVectorStore(path=tmp_path / "q"))
    assert built.n_points == len(chunk_set().chunks) and built.embedding == EmbeddingCounts()


def test_open_indexes_searches_what_build_indexes_made_without_writing(tmp_path: Path):
    cut = chunk_set()
    folder = tmp_path / "bm25" / "fixed-60"
    built = build_indexes(
        cut, cached(tmp_path), QdrantVectorStore(path=tmp_path / "q"), keyword_folder=folder
    )
    # a later process: new store and embedder objects on the same folders
    opened = open_indexes(
        cut, cached(tmp_path), QdrantVectorStore(path=tmp_path / "q"), keyword_folder=folder
    )
    assert opened.collection == built.collection and not opened.keyword_built
    assert opened.n_points == 0 and opened.embedding == EmbeddingCounts()
    assert search_both(opened) == search_both(built)
    # a lost BM25 index is rebuilt from the chunks, and says so
    shutil.rmtree(folder)
    rebuilt = open_indexes(
        cut, cached(tmp_path), QdrantVectorStore(path=tmp_path / "q"), keyword_folder=folder
    )
    assert rebuilt.keyword_built and search_both(rebuilt) == search_both(built)
    keyword_only = open_indexes(
        cut,
        cached(tmp_path),
        QdrantVectorStore(path=tmp_path / "q"),
        keyword_folder=folder,
        retrievers=["bm25"],
    )
    assert keyword_only.dense is None and keyword_only.keyword is not None
