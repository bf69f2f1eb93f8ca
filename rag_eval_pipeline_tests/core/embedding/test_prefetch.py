from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.embedding.base import Vectors
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache, EmbeddingCounts
from rag_eval_pipeline.core.embedding.prefetch import PrefetchEmbedder
from rag_eval_pipeline_tests.fakes import CountingEmbedder, HashingEmbedder


def test_announced_texts_go_to_the_model_with_the_first_request_and_later_ones_come_from_memory():
    inner = CountingEmbedder(HashingEmbedder())
    embedder = PrefetchEmbedder(inner, ["b c", "d e", "a b", "d e"])
    first = embedder.embed(["a b", "x y"])
    second = embedder.embed(["d e", "b c", "a b"])
    assert inner.calls == [["a b", "x y", "b c", "d e"]]  # one call, each distinct text once
    np.testing.assert_array_equal(first, HashingEmbedder().embed(["a b", "x y"]))
    np.testing.assert_array_equal(second, HashingEmbedder().embed(["d e", "b c", "a b"]))
    assert embedder.embed(["unannounced"]).shape == (1, 64) and inner.calls[1:] == [["unannounced"]]
    assert embedder.embed([]).shape == (0, 64) and len(inner.calls) == 2
    assert (embedder.model_id, embedder.dimension) == (inner.model_id, 64)


class Refuses(HashingEmbedder):
    """Fails any call that holds the text ``bad``."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        if "bad" in texts:
            raise RuntimeError("refused")
        return super().embed(texts)


def test_a_failure_stays_with_the_request_that_would_have_failed_without_the_prefetch():
    inner = CountingEmbedder(Refuses())
    embedder = PrefetchEmbedder(inner, ["good", "bad"])
    embedder.embed(["fine"])  # the announced "bad" fails the joint call: this request alone succeeds
    assert inner.calls == [["fine", "good", "bad"], ["fine"]]
    with pytest.raises(RuntimeError, match="refused"):
        embedder.embed(["bad"])  # fails as it would have without the prefetch
    embedder.embed(["good"])
    assert inner.calls[-1] == ["good"]


def test_through_a_cache_one_call_reaches_the_model_and_the_counts_see_through(tmp_path: Path):
    model = CountingEmbedder(HashingEmbedder())
    cached = CachedEmbedder(model, EmbeddingCache(tmp_path / "e.sqlite"))
    cached.embed(["old"])
    embedder = PrefetchEmbedder(cached, ["old", "one", "two"])
    embedder.embed(["two"])
    embedder.embed(["one", "old"])
    assert model.calls == [["old"], ["two", "one"]]
    assert EmbeddingCounts.of(embedder) == EmbeddingCounts(texts_embedded=3, cache_hits=1)
