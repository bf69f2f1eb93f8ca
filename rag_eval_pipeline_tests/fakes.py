"""Test doubles for local components only where the real one would make a test slow or vague.

The real MiniLM model is used by the integration tests; the hashed bag-of-words embedder is
deterministic and shares words -> similar vectors, which is enough for plumbing tests. The planned
embedder gives exact similarities where a test pins a threshold; the counting wrapper lets a test
assert which texts reached a (real) model.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from rag_eval_pipeline.core.embedding.base import Embedder, Vectors


class HashingEmbedder:
    def __init__(self, dimension: int = 64, model_id: str = "test:hashing-bow") -> None:
        self._dimension = dimension
        self._model_id = model_id
        self.calls = 0
        self.texts_seen = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.texts_seen += len(texts)
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                bucket = int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self._dimension
                out[row, bucket] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out


class PlannedEmbedder:
    """Every reference text lies on one axis; an answer planned at similarity ``s`` lies at angle
    ``acos(s)`` from it, so its cosine with any reference is ``s``. An unplanned text raises."""

    model_id = "planned"
    dimension = 2

    def __init__(self, references: Iterable[str], similarities: Mapping[str, float]) -> None:
        self.references = set(references)
        self.similarities = dict(similarities)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            if text in self.references:
                rows.append([1.0, 0.0])
            else:
                s = self.similarities[text]
                rows.append([s, math.sqrt(1.0 - s * s)])
        return np.asarray(rows, dtype=np.float64)


class CountingEmbedder:
    """Wraps an embedder and records the texts of every call.

    Pass ``calls`` to record into a list that outlives the wrapper (a Dagster resource builds a new
    wrapper per run).
    """

    def __init__(self, inner: Embedder, calls: list[list[str]] | None = None) -> None:
        self.inner = inner
        self.calls: list[list[str]] = [] if calls is None else calls

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return self.inner.embed(texts)
