"""Qdrant's in-process engine (qdrant-edge) behind the VectorStore protocol: the embedded default.

One shard per collection, in ``<folder>/<collection>/edge/``, with ``edge.json`` beside it holding the
fingerprint the collection was completed with (written after the last point, removed before the first)
and ``edge.lock``. A shard can be open in one process at a time (qdrant-edge locks its write-ahead log
and fails at once), so every opener takes ``edge.lock`` first and waits for it, bounded, with a log
line: two runs on different collections never wait for each other, two on one collection take turns.

Search is exact by default: an evaluation must not count an approximate search's misses against a
chunking setup. ``exact=False`` builds an HNSW index after each write and searches it.

A collection folder written by qdrant-client's local mode (``meta.json``, ``collection/``) is left as it
is (``RAG_EVAL_VECTOR_ENGINE=qdrant-local`` still reads it); the edge shard is built next to it from the
embedding cache, and a log line says so once.
"""

from __future__ import annotations

import errno as errno_codes
import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeOptimizersConfig,
    EdgeShard,
    EdgeVectorParams,
    Point,
    Query,
    QueryBatchRequest,
    QueryRequest,
    ScrollRequest,
    SearchParams,
    UpdateOperation,
)

from ..embedding.base import Vectors
from ..errors import StorageError
from ..progress import Progress, no_progress
from ..store.files import file_system_type, make_folder, storage_error, write_text_atomically
from ..store.paths import child_path
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

SHARD = "edge"
_STATE = "edge.json"
_LOCK = "edge.lock"
_SCROLL_PAGE = 2048
_OS_ERROR = re.compile(r"os error (\d+)")
_WRITE = "write Qdrant collection folder"
_PAYLOAD_BYTES = 2048  # a chunk's text and place, generously
_MARGIN_BYTES = 1024 * 1024  # a new shard's own files take about 200 KB
# File systems whose storage is memory (tmpfs, /dev/shm): a page of a memory-mapped file takes room
# there as soon as it is read, even inside a hole of a sparse file.
_MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs"})


class EdgeVectorStore:
    """Collections under ``path``, one folder each; ``exact`` (the default) searches every point."""

    def __init__(
        self,
        path: str | Path,
        *,
        exact: bool = True,
        lock_timeout: float = 300.0,
        progress: Progress = no_progress,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.exact = exact
        self.lock_timeout = lock_timeout
        self.progress = progress
        self._log = log or (lambda message: None)
        self._pinned: dict[str, EdgeShard] = {}

    @property
    def location(self) -> str:
        return f"edge:{self.path}"

    def _folder(self, name: str) -> Path:
        return child_path(self.path, name)

    # -- reading ------------------------------------------------------------------------------------

    def collection_exists(self, name: str) -> bool:
        return name in self._pinned or _is_shard(self._folder(name) / SHARD)

    def fingerprint(self, name: str) -> str | None:
        folder = self._folder(name)
        if not self.collection_exists(name):
            return None
        try:
            state = json.loads((folder / _STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # never completed, or cut short before its end
        value = state.get("fingerprint") if isinstance(state, dict) else None
        return str(value) if value else None

    def count(self, name: str) -> int:
        if not self.collection_exists(name):
            return 0
        with self._shard(name) as shard:
            return int(shard.count(CountRequest(exact=True)))

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        if k <= 0:
            raise ValueError(f"k must be >= 1, got {k}")
        params = SearchParams(exact=self.exact)
        with self._shard(name) as shard:

            def search_at(rows: Sequence[int], limit: int) -> list[Sequence[Any]]:
                requests = [
                    QueryRequest(
                        limit=limit,
                        query=Query.Nearest(queries[i].tolist()),
                        with_payload=True,
                        params=params,
                    )
                    for i in rows
                ]
                return list(shard.query_batch(QueryBatchRequest(requests))) if requests else []

            return search_with_whole_ties(search_at, len(queries), k)

    @contextmanager
    def session(self, name: str) -> Iterator[None]:
        """Keep the collection open (and its lock held) for a block of calls: other processes wait."""
        if name in self._pinned or not self.collection_exists(name):
            yield
            return
        folder = self._folder(name)
        with self._locked(folder):
            self._pinned[name] = _load(folder)
            try:
                yield
            finally:
                shard = self._pinned.pop(name)
                with _edge_errors(folder):
                    shard.close()

    @contextmanager
    def _shard(self, name: str) -> Iterator[EdgeShard]:
        if name in self._pinned:
            yield self._pinned[name]
            return
        folder = self._folder(name)
        if not _is_shard(folder / SHARD):
            raise LookupError(
                f"Qdrant collection {name} does not exist at {self.location}: build the index first "
                f"(materialize chunk_index)"
            )
        with self._locked(folder):
            shard = _load(folder)
            try:
                yield shard
            finally:
                with _edge_errors(folder):
                    shard.close()

    # -- writing ------------------------------------------------------------------------------------

    def replace_collection(
        self,
        name: str,
        chunks: Sequence[PositionAwareChunk],
        vectors: Vectors,
        chunk_config: str,
        fingerprint: str = "",
    ) -> int:
        dimension = vector_dimension(name, chunks, vectors)
        folder = self._folder(name)
        pinned = name in self._pinned
        with self._locked(folder) if not pinned else nullcontext():
            # first: a collection whose writing is cut short from here on has no fingerprint
            _forget_state(folder)
            shard = self._pinned[name] if pinned else None
            try:
                shard = self._writable(folder, shard, dimension, name)
                if pinned:
                    self._pinned[name] = shard
                written = self._write(shard, folder, name, chunks, vectors, chunk_config)
                with _edge_errors(folder):
                    if not self.exact:
                        shard.optimize()  # builds the HNSW index
                    shard.flush()
                # last: the collection holds every point
                if fingerprint:
                    _keep_state(folder, {"fingerprint": fingerprint})
                return written
            finally:
                if shard is not None and not pinned:
                    with _edge_errors(folder):
                        shard.close()

    def _writable(self, folder: Path, shard: EdgeShard | None, dimension: int, name: str) -> EdgeShard:
        """The collection's shard, made anew when missing or of another dimension (lock held)."""
        shard_folder = folder / SHARD
        if shard is None and _is_shard(shard_folder):
            shard = _load(folder)
        if shard is not None and _dimension(shard_folder) == dimension:
            return shard
        if shard is not None:
            with _edge_errors(folder):
                shard.close()
            self._log(f"Qdrant collection {name}: vectors of another dimension, made anew")
        elif (folder / "meta.json").exists() or (folder / "collection").is_dir():
            self._log(
                f"Qdrant collection {name}: {folder} holds a collection of qdrant-client's local mode; "
                f"it is kept as it is (RAG_EVAL_VECTOR_ENGINE=qdrant-local reads it; delete meta.json "
                f"and collection/ there to free the space), and qdrant-edge builds its own in "
                f"{shard_folder} from the embedding cache"
            )
        _check_room(folder, 0, dimension)
        with _edge_errors(folder):
            if shard_folder.exists():
                shutil.rmtree(shard_folder)
            config = EdgeConfig(
                vectors=EdgeVectorParams(size=max(dimension, 1), distance=Distance.Cosine),
                # no HNSW index for exact search: building one would only cost time
                optimizers=EdgeOptimizersConfig(indexing_threshold=0 if self.exact else 1),
            )
            return EdgeShard.create(str(shard_folder), config)

    def _write(
        self,
        shard: EdgeShard,
        folder: Path,
        name: str,
        chunks: Sequence[PositionAwareChunk],
        vectors: Vectors,
        chunk_config: str,
    ) -> int:
        payloads = [point_payload(chunk, chunk_config, vectors[i]) for i, chunk in enumerate(chunks)]
        with _edge_errors(folder):
            plan = plan_update(_stored_hashes(shard), payloads)
            if plan.delete or plan.write:
                _check_room(folder, len(plan.write), dimension=int(vectors.shape[1]))
            if plan.delete:
                shard.update(UpdateOperation.delete_points(list(plan.delete)))
            stage = f"indexing {name}"
            self.progress(stage, 0, len(plan.write))
            done = 0
            for batch in batches(plan.write):
                points = [
                    Point(id=point_id(chunks[i].chunk_id), vector=vectors[i].tolist(), payload=payloads[i])
                    for i in batch
                ]
                shard.update(UpdateOperation.upsert_points(points))
                done += len(batch)
                self.progress(stage, done, len(plan.write))
        if plan.delete or len(plan.write) < len(chunks):
            self._log(
                f"Qdrant collection {name}: {len(plan.write)} points written, {len(plan.delete)} deleted, "
                f"{len(chunks) - len(plan.write)} unchanged"
            )
        return len(plan.write)

    # -- the lock -----------------------------------------------------------------------------------

    @contextmanager
    def _locked(self, folder: Path) -> Iterator[None]:
        make_folder(folder)
        lock_path = folder / _LOCK
        try:
            handle = open(lock_path, "a")  # noqa: SIM115 (closed by the with below)
        except OSError as exc:
            raise storage_error(folder, _WRITE, exc, f" (creating {_LOCK})") from exc
        with handle:
            deadline = time.monotonic() + self.lock_timeout
            delay, said = 0.05, False
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"Qdrant collection folder {folder} is held by another process for more "
                            f"than {self.lock_timeout:.0f} s; wait for that run to finish, or use a "
                            f"Qdrant server (QDRANT_URL) for concurrent runs"
                        ) from None
                    if not said:
                        self._log(
                            f"waiting for the Qdrant collection folder {folder} (in use by another run)"
                        )
                        said = True
                    time.sleep(delay)
                    delay = min(delay * 2, 2.0)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def close(self) -> None:
        """Nothing stays open outside a session."""


def _is_shard(shard_folder: Path) -> bool:
    return (shard_folder / "edge_config.json").is_file()


def _dimension(shard_folder: Path) -> int | None:
    try:
        config = json.loads((shard_folder / "edge_config.json").read_text(encoding="utf-8"))
        return int(config["vectors"][""]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable: made anew


def _load(folder: Path) -> EdgeShard:
    # opening writes to the write-ahead log, and on tmpfs it fills the vector files' holes
    _check_room(folder, 0, 0, "open Qdrant collection folder", _opening_bytes(folder))
    with _edge_errors(folder):
        return EdgeShard.load(str(folder / SHARD))


def _opening_bytes(folder: Path) -> int:
    """The room opening the shard takes beyond what its files hold. qdrant-edge keeps vectors in
    memory-mapped files of 32 MB (``chunk_0.mmap``, sparse: only the written vectors take room) and
    reads them whole into memory on opening; on a file system whose storage is memory (tmpfs) that
    fills every hole: a collection of 56 points then takes 33.5 MB, not 1.4 MB. Elsewhere (ext4,
    xfs, btrfs) a read takes no room: 0."""
    if file_system_type(folder) not in _MEMORY_FILE_SYSTEMS:
        return 0
    holes = 0
    for path in (folder / SHARD / "segments").glob("*/vector_storage/**/*"):
        try:
            stat = path.stat()
        except OSError:
            continue  # gone meanwhile: it takes no room
        if path.is_file():
            holes += max(0, stat.st_size - stat.st_blocks * 512)
    return holes


def _stored_hashes(shard: EdgeShard) -> dict[str, str | None]:
    """Point id -> content hash of every point in the shard."""
    stored: dict[str, str | None] = {}
    offset: Any = None
    while True:
        records, offset = shard.scroll(
            ScrollRequest(offset=offset, limit=_SCROLL_PAGE, with_payload=[CONTENT_HASH], with_vector=False)
        )
        for record in records:
            value = (record.payload or {}).get(CONTENT_HASH)
            stored[str(record.id)] = str(value) if value else None
        if offset is None:
            return stored


def _forget_state(folder: Path) -> None:
    try:
        (folder / _STATE).unlink(missing_ok=True)
    except OSError as exc:
        raise storage_error(folder, _WRITE, exc, f" (removing {_STATE})") from exc


def _keep_state(folder: Path, state: dict[str, str]) -> None:
    try:
        write_text_atomically(folder / _STATE, json.dumps(state))
    except StorageError as exc:  # named after the collection folder, as every other error here
        raise StorageError(folder, _WRITE, exc.reason, exc.remedy, exc.errno) from exc


def _check_room(folder: Path, points: int, dimension: int, operation: str = _WRITE, opening: int = 0) -> None:
    """qdrant-edge writes through memory-mapped files that grow sparsely: on a full disk a write into
    them, even the one opening a shard makes, kills the process (SIGBUS) instead of raising. So a shard
    is opened, and written, only when the disk has room for it (the vectors and payloads twice,
    write-ahead log and segment, plus a margin for new files, plus ``opening``: what opening takes,
    see ``_opening_bytes``); a disk filled by someone else meanwhile is beyond this check."""
    needed = points * (4 * dimension + _PAYLOAD_BYTES) * 2 + _MARGIN_BYTES + opening
    try:
        stats = os.statvfs(folder)
    except OSError:
        return  # cannot tell: the write reports what it meets
    if stats.f_flag & os.ST_RDONLY:
        return  # nothing can fill it: the write reports that it is read-only
    free = stats.f_bavail * stats.f_frsize
    if free < needed:
        reason = f"[Errno {errno_codes.ENOSPC}] {os.strerror(errno_codes.ENOSPC)}: {free:,} bytes free, "
        if opening:
            reason += (
                f"about {needed:,} needed ({opening:,} of them because opening reads its vector files "
                f"whole into memory-mapped pages, which take room on a memory file system)"
            )
        else:
            reason += f"about {needed:,} needed"
        raise StorageError(folder, operation, reason, "free space on that disk", errno_codes.ENOSPC)


@contextmanager
def _edge_errors(folder: Path) -> Iterator[None]:
    """qdrant-edge reports a full or read-only disk as a plain ``Exception`` quoting the OS error:
    raised again as a ``StorageError`` naming the collection folder; other errors pass unchanged."""
    try:
        yield
    except StorageError:
        raise
    except OSError as exc:
        raise storage_error(folder, _WRITE, exc) from exc
    except Exception as exc:
        found = _OS_ERROR.search(str(exc))
        code = int(found.group(1)) if found else None
        if code not in (
            errno_codes.ENOSPC,
            errno_codes.EDQUOT,
            errno_codes.EROFS,
            errno_codes.EACCES,
            errno_codes.EPERM,
        ):
            raise
        assert code is not None
        os_error = OSError(code, str(exc))
        raise storage_error(folder, _WRITE, os_error) from exc
