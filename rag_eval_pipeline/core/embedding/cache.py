"""An on-disk embedding cache keyed by (model id, sha256(text)): nothing is ever embedded twice.

SQLite in WAL mode, so parallel Dagster runs on one machine can share it.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..progress import Progress, no_progress
from ..store.sqlite_store import cache_file, open_shared_db
from ..types import sha256_hex
from .base import Embedder, Vectors
from .prefetch import PrefetchEmbedder

T = TypeVar("T")


# Vectors a process keeps once read from or written to a cache (the most recent ``KEPT_VECTORS``, 15 MB
# of MiniLM's): a text's vector under a model never changes, and a run asks for the same ones again and
# again (a chunk config's sentences in each profile's answers, the questions in every replay of the
# diagnostics), each step through its own connection: the SQLite lookups were ~0.4 CPU s of a cold demo
# run. Keyed by the cache's identity, a token its database holds: a cache deleted and made anew at the
# same path is another cache.
KEPT_VECTORS = 10_000
_kept: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
_kept_lock = threading.Lock()


class EmbeddingCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = open_shared_db(
            cache_file(self.path, "embedding cache", "re-embedding the texts"),
            "CREATE TABLE IF NOT EXISTS embeddings (model_id TEXT NOT NULL, text_sha256 TEXT NOT NULL, "
            "dimension INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model_id, text_sha256))",
        )
        self._identity = self._cache_identity()

    def _cache_identity(self) -> str:
        """The token naming this cache's database, made with it (or the first time a process opens one
        made before it had one)."""
        with self._lock:
            self._db.execute("CREATE TABLE IF NOT EXISTS cache_identity (token TEXT NOT NULL)")
            row = self._db.execute("SELECT token FROM cache_identity ORDER BY rowid LIMIT 1").fetchone()
            if row is None:
                self._db.execute("INSERT INTO cache_identity VALUES (?)", (uuid.uuid4().hex,))
                self._db.commit()
                row = self._db.execute("SELECT token FROM cache_identity ORDER BY rowid LIMIT 1").fetchone()
            return str(row[0])

    def get_many(self, model_id: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(digests))
        with _kept_lock:
            for digest in unique:
                vector = _kept.get((self._identity, model_id, digest))
                if vector is not None:
                    found[digest] = vector
        missing = [d for d in unique if d not in found]
        read: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(missing), 500):
                batch = missing[i : i + 500]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT text_sha256, vector FROM embeddings WHERE model_id = ? AND text_sha256 IN ({marks})",
                    (model_id, *batch),
                )
                for digest, blob in rows:
                    read[digest] = np.frombuffer(blob, dtype=np.float32)
        self._keep(model_id, read)
        found.update(read)
        return found

    def put_many(self, model_id: str, digests: Sequence[str], vectors: Vectors) -> None:
        rows = [
            (model_id, digest, int(vector.shape[0]), np.ascontiguousarray(vector, dtype=np.float32).tobytes())
            for digest, vector in zip(digests, vectors, strict=True)
        ]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            self._db.commit()
        self._keep(model_id, {digest: np.frombuffer(blob, dtype=np.float32) for _, digest, _, blob in rows})

    def _keep(self, model_id: str, vectors: dict[str, np.ndarray]) -> None:
        """Read-only vectors (``frombuffer`` of bytes), as a read from the database gives them."""
        with _kept_lock:
            for digest, vector in vectors.items():
                key = (self._identity, model_id, digest)
                _kept[key] = vector
                _kept.move_to_end(key)
            while len(_kept) > KEPT_VECTORS:
                _kept.popitem(last=False)

    def count(self, model_id: str | None = None) -> int:
        with self._lock:
            if model_id is None:
                return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            query = "SELECT COUNT(*) FROM embeddings WHERE model_id = ?"
            return int(self._db.execute(query, (model_id,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


# Texts per call to the model: one call for any step of the bundled demo, and on 2 CPU cores about
# half a minute of MiniLM between progress reports for a large corpus.
TEXTS_PER_CALL = 512


def even_slices(items: Sequence[T], most: int) -> list[Sequence[T]]:
    """``items`` in the fewest slices of at most ``most``, of near-equal sizes (600 by 512: 300 + 300,
    not 512 + 88), in order."""
    if not items:
        return []
    n = -(-len(items) // most)
    size, extra = divmod(len(items), n)
    slices, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        slices.append(items[start:end])
        start = end
    return slices


class CachedEmbedder:
    """Wraps any Embedder; only texts whose (model id, sha256) is not cached reach the model.

    The texts missing from one ``embed`` call go to the model together, each distinct text once: one
    call of up to ``texts_per_call`` texts (the model batches inside it; sentence-transformers sorts a
    call's texts by length, so a large call pads less than many small ones). More missing texts than
    that are split into equal calls, each followed by a progress report and written to the cache, so a
    long embedding shows progress and an interrupted one resumes from the last call.

    ``texts_embedded`` counts distinct texts sent to the model; ``cache_hits`` counts input texts found
    in the cache (a text repeated within one call is embedded once and is not a hit).
    """

    def __init__(
        self,
        inner: Embedder,
        cache: EmbeddingCache,
        *,
        texts_per_call: int = TEXTS_PER_CALL,
        progress: Progress = no_progress,
    ) -> None:
        if texts_per_call < 1:
            raise ValueError(f"texts_per_call must be >= 1, got {texts_per_call}")
        self.inner = inner
        self.cache = cache
        self.texts_per_call = texts_per_call
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
            self.before_embedding([text_of[d] for d in missing])
            stage = f"embedding ({self.model_id})"
            self.progress(stage, 0, len(missing))
            done = 0
            for batch in even_slices(missing, self.texts_per_call):
                vectors = self.inner.embed([text_of[d] for d in batch])
                if len(vectors) != len(batch):
                    raise ValueError(
                        f"{self.model_id} returned {len(vectors)} vectors for {len(batch)} texts"
                    )
                self.cache.put_many(self.model_id, batch, vectors)
                cached.update(zip(batch, vectors, strict=True))
                self.texts_embedded += len(batch)
                done += len(batch)
                self.progress(stage, done, len(missing))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([cached[d] for d in digests]).astype(np.float32, copy=False)

    def before_embedding(self, missing: Sequence[str]) -> None:
        """Called once per ``embed`` with every text it is about to send to the model: a subclass says
        what is ahead before the wait (core/project/workload.py announces a long one)."""


@dataclass(frozen=True)
class EmbeddingCounts:
    """Texts sent to the model and texts served from the cache, as a ``CachedEmbedder`` counts them:
    what a step reports about its embedding cost."""

    texts_embedded: int = 0
    cache_hits: int = 0

    @classmethod
    def of(cls, embedder: Embedder) -> EmbeddingCounts:
        """The counts so far; zero for an embedder without a cache, which counts nothing."""
        while isinstance(embedder, PrefetchEmbedder):
            embedder = embedder.inner
        if isinstance(embedder, CachedEmbedder):
            return cls(embedder.texts_embedded, embedder.cache_hits)
        return cls()

    def since(self, earlier: EmbeddingCounts) -> EmbeddingCounts:
        return EmbeddingCounts(
            self.texts_embedded - earlier.texts_embedded, self.cache_hits - earlier.cache_hits
        )
