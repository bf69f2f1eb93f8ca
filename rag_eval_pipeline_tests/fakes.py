"""Test doubles for local components only where the real one would make a property test slow.

The real MiniLM model is used by the integration tests; this hashed bag-of-words embedder is
deterministic and shares words -> similar vectors, which is enough for plumbing tests.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from rag_eval_pipeline.core.embedding.base import Vectors


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
