"""Semantic correctness: the design's examples against the real MiniLM, and the batch embedding."""

from __future__ import annotations

import numpy as np
import pytest

from rag_eval_pipeline.core.answers.semantic import (
    DEFAULT_FIXED_THRESHOLD,
    cosine_similarities,
    format_threshold,
    semantic_verdict,
    verdict_from,
)
from rag_eval_pipeline.core.answers.types import MetricOutcome
from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline_tests.fakes import CountingEmbedder

REFERENCE = "Paris is France's capital city"


def test_design_examples_with_minilm(minilm: Embedder):
    answers = ["The capital of France is Paris", "The capital of France is Lyon", "I don't know"]
    embedder = CountingEmbedder(minilm)
    similarities = cosine_similarities(embedder, [(a, REFERENCE) for a in answers])
    assert similarities == pytest.approx([0.965, 0.708, 0.013], abs=0.002)
    verdicts = [semantic_verdict(s, DEFAULT_FIXED_THRESHOLD).value for s in similarities]
    assert verdicts == [1.0, 0.0, 0.0]
    assert embedder.calls == [[answers[0], REFERENCE, *answers[1:]]]  # one call, each text once


class Scaled:
    """Unnormalised rows: the cosine must not depend on vector length."""

    model_id = "scaled"
    dimension = 2

    def embed(self, texts):
        table = {"a": [3.0, 0.0], "b": [2.0, 2.0], "zero": [0.0, 0.0]}
        return np.asarray([table[t] for t in texts], dtype=np.float32)


def test_cosine_is_normalised_and_a_zero_vector_is_an_error():
    assert cosine_similarities(Scaled(), [("a", "b"), ("a", "a")]) == pytest.approx([0.70710678, 1.0])
    assert cosine_similarities(Scaled(), []) == []
    with pytest.raises(ValueError, match="zero vector"):
        cosine_similarities(Scaled(), [("a", "zero")])


def test_verdicts():
    assert semantic_verdict(0.75, 0.75) == MetricOutcome.ok(1.0, "similarity 0.750 >= 0.75")
    assert semantic_verdict(0.7078, 0.7, "fitted") == MetricOutcome.ok(
        1.0, "similarity 0.708 >= 0.70 (fitted)"
    )
    assert semantic_verdict(0.7078, 0.725).detail == "similarity 0.708 < 0.725"
    skipped = MetricOutcome.skipped("no reference answer")
    assert verdict_from(skipped, 0.75) is skipped
    assert format_threshold(0.7) == "0.70"
