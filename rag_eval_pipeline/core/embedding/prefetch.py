"""One embedding call for a step that embeds in several places.

A step such as ``answer_metrics`` embeds in two functions (answer/reference similarity, then source
agreement), each written to embed its own texts in one call. Told up front which texts the step will
ask for, ``PrefetchEmbedder`` embeds them all at the first request, together with whatever that
request asks, and serves every later request from memory: one call to the inner embedder (and so one
pass of the model over every missing text, through a ``CachedEmbedder``) instead of one per function.

The vectors are the inner embedder's for the same texts, so results do not change. A text nobody
announced still works (it costs one more call). A failure stays where it was: when the call of the
announced texts fails, the request is retried with its own texts alone, so it fails (or succeeds)
exactly as it would have without the prefetch, and the next request tries the announced texts again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .base import Embedder, Vectors


class PrefetchEmbedder:
    """An Embedder over ``inner`` that embeds the ``pending`` texts with the first request."""

    def __init__(self, inner: Embedder, pending: Iterable[str]) -> None:
        self.inner = inner
        self._pending = list(dict.fromkeys(pending))
        self._vectors: dict[str, np.ndarray] = {}
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        asked = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if asked:
            seen = set(asked)
            announced = [t for t in self._pending if t not in self._vectors and t not in seen]
            try:
                self._embed(asked + announced)
            except Exception:
                if not announced:
                    raise
                self._embed(asked)  # as without the prefetch: this request's texts only
            self._pending = [t for t in self._pending if t not in self._vectors]
        return np.stack([self._vectors[t] for t in texts]).astype(np.float32, copy=False)

    def _embed(self, texts: list[str]) -> None:
        self.calls += 1
        vectors = self.inner.embed(texts)
        if len(vectors) != len(texts):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
        self._vectors.update(zip(texts, vectors, strict=True))
