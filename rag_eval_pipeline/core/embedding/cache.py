"""An on-disk embedding cache keyed by (model id, sha256(text)): nothing is ever embedded twice.

SQLite in WAL mode, so parallel Dagster runs on one machine can share it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..progress import Progress, no_progress
from ..sqlite_store import open_shared_db
from ..types import sha256_hex
from .base import Embedder, Vectors


class EmbeddingCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = open_shared_db(
            self.path,
            "CREATE TABLE IF NOT EXISTS embeddings (model_id TEXT NOT NULL, text_sha256 TEXT NOT NULL, "
            "dimension INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model_id, text_sha256))",
        )

    def get_many(self, model_id: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(digests))
        with self._lock:
            for i in range(0, len(unique), 500):
                batch = unique[i : i + 500]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT text_sha256, vector FROM embeddings WHERE model_id = ? AND text_sha256 IN ({marks})",
                    (model_id, *batch),
                )
                for digest, blob in rows:
                    found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model_id: str, digests: Sequence[str], vectors: Vectors) -> None:
        rows = [
            (model_id, digest, int(vector.shape[0]), np.ascontiguousarray(vector, dtype=np.float32).tobytes())
            for digest, vector in zip(digests, vectors, strict=True)
        ]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            self._db.commit()

    def count(self, model_id: str | None = None) -> int:
        with self._lock:
            if model_id is None:
                return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            query = "SELECT COUNT(*) FROM embeddings WHERE model_id = ?"
            return int(self._db.execute(query, (model_id,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedEmbedder:
    """Wraps any Embedder; only texts whose (model id, sha256) is not cached reach the model.

    ``texts_embedded`` counts distinct texts sent to the model; ``cache_hits`` counts input texts found
    in the cache (a text repeated within one call is embedded once and is not a hit).
    """

    def __init__(
        self, inner: Embedder, cache: EmbeddingCache, batch_size: int = 64, progress: Progress = no_progress
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.batch_size = batch_size
        self.progress = progress
        self.texts_embedded = 0
        self.cache_hits = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        digests = [sha256_hex(t) for t in texts]
        cached = self.cache.get_many(self.model_id, digests)
        missing = list(dict.fromkeys(d for d in digests if d not in cached))
        self.cache_hits += sum(1 for d in digests if d in cached)
        if missing:
            text_of = dict(zip(digests, texts, strict=True))
            stage = f"embedding ({self.model_id})"
            self.progress(stage, 0, len(missing))
            for i in range(0, len(missing), self.batch_size):
                batch = missing[i : i + self.batch_size]
                vectors = self.inner.embed([text_of[d] for d in batch])
                self.cache.put_many(self.model_id, batch, vectors)
                cached.update(zip(batch, vectors, strict=True))
                self.texts_embedded += len(batch)
                self.progress(stage, min(i + self.batch_size, len(missing)), len(missing))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([cached[d] for d in digests]).astype(np.float32, copy=False)


@dataclass(frozen=True)
class EmbeddingCounts:
    """Texts sent to the model and texts served from the cache, as a ``CachedEmbedder`` counts them:
    what a step reports about its embedding cost."""

    texts_embedded: int = 0
    cache_hits: int = 0

    @classmethod
    def of(cls, embedder: Embedder) -> EmbeddingCounts:
        """The counts so far; zero for an embedder without a cache, which counts nothing."""
        if isinstance(embedder, CachedEmbedder):
            return cls(embedder.texts_embedded, embedder.cache_hits)
        return cls()

    def since(self, earlier: EmbeddingCounts) -> EmbeddingCounts:
        return EmbeddingCounts(
            self.texts_embedded - earlier.texts_embedded, self.cache_hits - earlier.cache_hits
        )
