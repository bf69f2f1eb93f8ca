"""Embedders for answer-correctness tests: planned similarities, and a call counter for a real one."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np


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
    """Wraps an embedder and records the texts of every call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray(self.inner.embed(texts))
