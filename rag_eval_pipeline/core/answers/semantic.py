"""Semantic correctness: cosine similarity of an answer and its reference answer, against a threshold.

The similarity is kept as its own outcome (``semantic_similarity``) next to the 0/1 verdict, so a
reader can re-threshold without re-embedding. All unique texts of a batch go to the embedder in one
call: a caching embedder then pays once per text, and MiniLM batches efficiently.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..embedding.base import Embedder
from .types import MetricOutcome

DEFAULT_FIXED_THRESHOLD = 0.75
NO_REFERENCE = "no reference answer"


def has_reference(reference_answer: str | None) -> bool:
    return reference_answer is not None and bool(reference_answer.strip())


def cosine_similarities(embedder: Embedder, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Cosine similarity of each ``(answer, reference)`` pair, embedding each unique text once.

    Computed in float64 from the embedder's rows (re-normalised, so an embedder that does not
    normalise still gives a cosine); a zero vector has no direction and raises ``ValueError``.
    """
    if not pairs:
        return []
    texts = list(dict.fromkeys(text for pair in pairs for text in pair))
    vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
    if vectors.shape[0] != len(texts):
        raise ValueError(f"the embedder returned {vectors.shape[0]} vectors for {len(texts)} texts")
    norms = np.linalg.norm(vectors, axis=1)
    if np.any(norms == 0):
        empty = texts[int(np.argmin(norms))]
        raise ValueError(f"the embedding of {empty[:60]!r} is a zero vector: no cosine is defined")
    unit = vectors / norms[:, None]
    row = {text: i for i, text in enumerate(texts)}
    return [float(np.clip(unit[row[a]] @ unit[row[b]], -1.0, 1.0)) for a, b in pairs]


def format_threshold(threshold: float) -> str:
    """Two decimals for grid values (``0.70``), more only when the value needs them (``0.725``)."""
    two = f"{threshold:.2f}"
    return two if float(two) == threshold else repr(threshold)


def semantic_verdict(similarity: float, threshold: float, note: str = "") -> MetricOutcome:
    """1.0 when ``similarity >= threshold`` (at the threshold counts as correct), else 0.0."""
    correct = similarity >= threshold
    detail = f"similarity {similarity:.3f} {'>=' if correct else '<'} {format_threshold(threshold)}"
    return MetricOutcome.ok(1.0 if correct else 0.0, f"{detail} ({note})" if note else detail)


def verdict_from(similarity: MetricOutcome, threshold: float, note: str = "") -> MetricOutcome:
    """The 0/1 verdict from a similarity outcome; a skipped or failed similarity passes through."""
    if similarity.status != "ok" or similarity.value is None:
        return similarity
    return semantic_verdict(similarity.value, threshold, note)
