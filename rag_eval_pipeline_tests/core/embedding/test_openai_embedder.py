"""The real openai client against a local server that speaks the embeddings protocol."""

from pathlib import Path

import numpy as np

from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.embedding.openai_embedder import OpenAIEmbedder
from rag_eval_pipeline_tests.openai_server import openai_server


def test_embeds_in_batches_in_input_order_normalised():
    with openai_server() as (url, script):
        embedder = OpenAIEmbedder("text-embedding-3-small", api_key="sk-test", base_url=url, batch_size=2)
        vectors = embedder.embed(["a", "b", "c"])
    assert len(script.requests) == 2
    assert [r["body"]["input"] for r in script.requests] == [["a", "b"], ["c"]]
    expected = np.array([script.embedding(t) for t in "abc"], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert embedder.model_id == "openai:text-embedding-3-small"
    assert script.auth_headers[0] == "Bearer sk-test"


def test_retries_rate_limits_and_server_errors_then_caches(tmp_path: Path):
    with openai_server() as (url, script):
        script.faults = [(429, {"Retry-After": "0"}), (500, {})]
        embedder = OpenAIEmbedder("text-embedding-3-small", api_key="sk-test", base_url=url, max_retries=3)
        cached = CachedEmbedder(embedder, EmbeddingCache(tmp_path / "e.sqlite"))
        first = cached.embed(["hello", "world"])
        assert len(script.requests) == 3  # two faults, then success
        again = CachedEmbedder(embedder, EmbeddingCache(tmp_path / "e.sqlite")).embed(["world", "hello"])
        assert len(script.requests) == 3  # everything came from the cache
    np.testing.assert_allclose(again, first[[1, 0]])
