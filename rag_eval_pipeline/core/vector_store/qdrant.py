"""qdrant-client behind the VectorStore protocol: a Qdrant server when given a URL, else its local mode
(the embedded default is Qdrant's in-process engine, edge.py; engines.py chooses).

Local mode keeps one storage folder per collection, because an embedded Qdrant folder can be open
in one process at a time: two Dagster runs on different chunk configs then never wait for each other,
and runs on the same collection wait for the folder lock (bounded) instead of failing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from ..embedding.base import Vectors
from ..errors import StorageError
from ..progress import Progress, no_progress
from ..redaction import redact_exception
from ..store.files import make_folder
from ..store.paths import child_path
from ..store.sqlite_store import storage_errors_name
from ..types import PositionAwareChunk
from .base import ScoredChunk
from .points import (
    CONTENT_HASH,
    batches,
    plan_update,
    point_id,
    point_payload,
    search_with_whole_ties,
    vector_dimension,
)

# The collection metadata key of the fingerprint replace_collection completed it with.
_FINGERPRINT = "rag_eval_fingerprint"


class QdrantVectorStore:
    def __init__(
        self,
        path: str | Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        lock_timeout: float = 300.0,
        progress: Progress = no_progress,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if (path is None) == (url is None):
            raise ValueError("QdrantVectorStore needs exactly one of path= (local mode) or url= (server)")
        self.path = Path(path) if path is not None else None
        self.url = url
        self._api_key = api_key
        self.lock_timeout = lock_timeout
        self.progress = progress
        self._log = log or (lambda message: None)
        self._server_client: QdrantClient | None = None
        self._pinned: dict[str, QdrantClient] = {}

    @property
    def location(self) -> str:
        return self.url if self.url else f"local:{self.path}"

    @contextmanager
    def _client(self, name: str) -> Iterator[QdrantClient]:
        if self.url is not None:
            failure: BaseException | None = None
            try:
                if self._server_client is None:
                    self._server_client = QdrantClient(url=self.url, api_key=self._api_key)
                yield self._server_client
            except Exception as exc:  # the server's error text may quote the key or the URL's password
                failure = redact_exception(exc)
                if failure is exc:
                    raise
            if failure is not None:
                raise failure  # outside the except block: the unredacted original is not chained
            return
        if name in self._pinned:
            yield self._pinned[name]
            return
        assert self.path is not None
        client = self._open_local(child_path(self.path, name))
        try:
            yield client
        finally:
            client.close()

    @contextmanager
    def session(self, name: str) -> Iterator[None]:
        """Keep a local collection open for a block of calls: opening loads every point, so a batched
        retrieval opens it once instead of once per batch (other processes wait meanwhile)."""
        if self.url is not None or name in self._pinned:
            yield
            return
        assert self.path is not None
        self._pinned[name] = self._open_local(child_path(self.path, name))
        try:
            yield
        finally:
            self._pinned.pop(name).close()

    def _open_local(self, folder: Path) -> QdrantClient:
        make_folder(folder)
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.2
        while True:
            try:
                with _local_storage(folder):
                    return QdrantClient(path=str(folder))
            except RuntimeError as exc:
                if "already accessed" not in str(exc) or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"local Qdrant folder {folder} is held by another process for more than "
                        f"{self.lock_timeout:.0f} s; wait for that run to finish, or use a Qdrant server "
                        f"(QDRANT_URL) for concurrent runs"
                    ) from exc
                self._log(f"waiting for the local Qdrant folder {folder} (in use by another run)")
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def collection_exists(self, name: str) -> bool:
        if self.path is not None and not child_path(self.path, name).exists():
            return False
        with self._client(name) as client:
            return bool(client.collection_exists(name))

    def count(self, name: str) -> int:
        if not self.collection_exists(name):
            return 0
        with self._client(name) as client:
            return int(client.count(name, exact=True).count)

    def fingerprint(self, name: str) -> str | None:
        if not self.collection_exists(name):
            return None
        with self._client(name) as client:
            metadata = client.get_collection(name).config.metadata or {}
        value = metadata.get(_FINGERPRINT)
        return str(value) if value else None

    def replace_collection(
        self,
        name: str,
        chunks: Sequence[PositionAwareChunk],
        vectors: Vectors,
        chunk_config: str,
        fingerprint: str = "",
    ) -> int:
        dimension = vector_dimension(name, chunks, vectors)
        payloads = [point_payload(chunk, chunk_config, vectors[i]) for i, chunk in enumerate(chunks)]
        storage = _local_storage(child_path(self.path, name)) if self.path is not None else nullcontext()
        with self._client(name) as client, storage:
            stored: dict[str, str | None] = {}
            if client.collection_exists(name) and _dimension(client, name) == dimension:
                # first: a collection whose update is cut short has no fingerprint
                with suppress(UnexpectedResponse):
                    client.update_collection(name, metadata={_FINGERPRINT: ""})
                stored = _stored_hashes(client, name)
            else:
                if client.collection_exists(name):
                    client.delete_collection(name)
                client.create_collection(
                    name, vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE)
                )
            plan = plan_update(stored, payloads)
            if plan.delete:
                client.delete(name, points_selector=models.PointIdsList(points=list(plan.delete)), wait=True)
            stage = f"indexing {name}"
            self.progress(stage, 0, len(plan.write))
            done = 0
            for batch in batches(plan.write):
                points = [
                    models.PointStruct(
                        id=point_id(chunks[i].chunk_id), vector=vectors[i].tolist(), payload=payloads[i]
                    )
                    for i in batch
                ]
                client.upsert(name, points=points, wait=True)
                done += len(batch)
                self.progress(stage, done, len(plan.write))
            # last: a collection whose writing was cut short has none; a server that keeps no collection
            # metadata refuses it, and the collection is rebuilt every time, as before
            if fingerprint:
                with suppress(UnexpectedResponse):
                    client.update_collection(name, metadata={_FINGERPRINT: fingerprint})
            return len(plan.write)

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        if k <= 0:
            raise ValueError(f"k must be >= 1, got {k}")
        with self._client(name) as client:
            if not client.collection_exists(name):
                raise LookupError(
                    f"Qdrant collection {name} does not exist at {self.location}: build the index first "
                    f"(materialize chunk_index)"
                )

            def search_at(rows: Sequence[int], limit: int) -> list[Sequence[Any]]:
                requests = [
                    models.QueryRequest(query=queries[i].tolist(), limit=limit, with_payload=True)
                    for i in rows
                ]
                responses = client.query_batch_points(name, requests=requests) if requests else []
                return [response.points for response in responses]

            return search_with_whole_ties(search_at, len(queries), k)

    def close(self) -> None:
        if self._server_client is not None:
            self._server_client.close()
            self._server_client = None


@contextmanager
def _local_storage(folder: Path) -> Iterator[None]:
    """A full or read-only disk raises ``StorageError`` naming the folder; qdrant-client's half-written
    ``meta.json.tmp`` is removed."""
    try:
        with storage_errors_name(folder, "local Qdrant folder"):
            yield
    except StorageError as exc:
        leftover = folder / "meta.json.tmp"
        if os.path.lexists(leftover):
            try:
                leftover.unlink()
            except OSError as cleanup:
                exc.add_note(f"{leftover} could not be removed: {cleanup}")
        raise


def _dimension(client: QdrantClient, name: str) -> int | None:
    params = client.get_collection(name).config.params.vectors
    return int(params.size) if isinstance(params, models.VectorParams) else None


def _stored_hashes(client: QdrantClient, name: str) -> dict[str, str | None]:
    """Point id -> content hash of every point in the collection."""
    stored: dict[str, str | None] = {}
    offset: models.ExtendedPointId | None = None
    while True:
        records, offset = client.scroll(
            name, offset=offset, limit=2048, with_payload=[CONTENT_HASH], with_vectors=False
        )
        for record in records:
            value = (record.payload or {}).get(CONTENT_HASH)
            stored[str(record.id)] = str(value) if value else None
        if offset is None:
            return stored
