from pathlib import Path

import numpy as np

from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline_tests.fakes import HashingEmbedder


def test_only_unseen_texts_reach_the_model_and_vectors_match(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    inner = HashingEmbedder()
    first = CachedEmbedder(inner, cache, batch_size=2)
    vectors = first.embed(["a b", "c d", "a b", "e f"])
    assert first.texts_embedded == 3  # the repeated text is embedded once
    assert np.allclose(vectors[0], vectors[2])
    np.testing.assert_allclose(vectors, inner.embed(["a b", "c d", "a b", "e f"]))

    second = CachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "e.sqlite"))
    again = second.embed(["e f", "a b", "new text"])
    assert second.texts_embedded == 1 and second.cache_hits == 2
    np.testing.assert_allclose(again[:2], vectors[[3, 0]])


def test_cache_is_keyed_by_model(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    CachedEmbedder(HashingEmbedder(model_id="m1"), cache).embed(["x"])
    other = CachedEmbedder(HashingEmbedder(model_id="m2"), cache)
    other.embed(["x"])
    assert other.texts_embedded == 1
    assert cache.count("m1") == 1 and cache.count() == 2


def test_progress_is_reported_per_batch(tmp_path: Path):
    seen = []
    embedder = CachedEmbedder(
        HashingEmbedder(),
        EmbeddingCache(tmp_path / "e.sqlite"),
        batch_size=2,
        progress=lambda stage, done, total: seen.append((done, total)),
    )
    embedder.embed(["a", "b", "c", "d", "e"])
    assert seen == [(0, 5), (2, 5), (4, 5), (5, 5)]
    assert embedder.embed([]).shape == (0, 64)
