"""The on-disk caches' database: SQLite in WAL mode, so parallel Dagster runs on one machine share it.

SQLite reports a full disk, a read-only file or a damaged one as "database or disk is full" / "attempt to
write a readonly database" / "database disk image is malformed", without the file; the connection here
raises ``StorageError`` naming the database, what it holds and what to do (and so do the local Qdrant
folder and the Dagster instance's storage, which are SQLite too). What a cache stores passes through
``core/redaction.py`` first: a secret echoed by a server (an LLM reply quoting the API key) is stored
as its marker, never in clear.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StorageError
from ..redaction import redact_value
from .files import make_folder, storage_error

# Primary result codes (the low byte of an extended code) that mean the storage, not the SQL, failed.
_STORAGE_CODES = {
    sqlite3.SQLITE_FULL: "free space on that disk",
    sqlite3.SQLITE_READONLY: "make that file and its folder writable",
    sqlite3.SQLITE_CANTOPEN: "make that folder writable",
    sqlite3.SQLITE_IOERR: "check that disk",
    sqlite3.SQLITE_PERM: "give this user write permission there",
}
# ... and that the file is damaged (cut short, overwritten, not a database at all): what to do then
# depends on what the file holds (``SqliteFile.if_damaged``).
_DAMAGED_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})

# Every connection ``open_shared_db`` made that is still open (``close_open_dbs``).
_OPEN: weakref.WeakSet[sqlite3.Connection] = weakref.WeakSet()


@dataclass(frozen=True)
class SqliteFile:
    """A SQLite database of the project: its path, what it holds (for messages) and what a user does
    when it is damaged (what deleting it costs)."""

    path: Path
    what: str = "cache database"
    if_damaged: str = "move it away or restore it from a backup"


def cache_file(path: Path, what: str, rebuilt_by: str) -> SqliteFile:
    """A cache: deleting it loses nothing but the work it saves, which ``rebuilt_by`` names."""
    return SqliteFile(
        path,
        what,
        f"delete it (with its -wal and -shm files, if any): that costs only {rebuilt_by}, which the "
        "next run does by itself",
    )


class _CacheCursor(sqlite3.Cursor):
    """Rows are read page by page while iterating: a damaged page found then names the file too."""

    store: SqliteFile

    def __next__(self) -> Any:
        with storage_errors_name(self.store):
            return super().__next__()

    def fetchone(self) -> Any:
        with storage_errors_name(self.store):
            return super().fetchone()

    def fetchall(self) -> list[Any]:
        with storage_errors_name(self.store):
            return super().fetchall()

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        with storage_errors_name(self.store):
            return super().fetchmany(size)


class _CacheConnection(sqlite3.Connection):
    """A connection whose storage failures name its file, and that stores no secret in clear."""

    store: SqliteFile

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        cursor = self.cursor(_CacheCursor)
        cursor.store = self.store
        with storage_errors_name(self.store):
            return cursor.execute(sql, redact_value(parameters))

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        with storage_errors_name(self.store):
            return super().executemany(sql, redact_value(list(parameters)))

    def commit(self) -> None:
        with storage_errors_name(self.store):
            super().commit()


@contextmanager
def storage_errors_name(store: SqliteFile | Path, what: str = "cache database") -> Iterator[None]:
    """A full, read-only or damaged database, reported by SQLite (or by SQLAlchemy around it) or the
    OS, raises ``StorageError`` naming the file (``what`` says what it is, for a bare path); other
    errors (a locked database, bad SQL) pass unchanged."""
    store = store if isinstance(store, SqliteFile) else SqliteFile(store, what)
    try:
        yield
    except StorageError:
        raise
    except OSError as exc:
        raise storage_error(store.path, f"write {store.what}", exc) from exc
    except Exception as exc:
        error = sqlite_error_of(exc)
        if error is None:
            raise
        failure = storage_failure(store, error)
        if failure is None:
            raise
        raise failure from exc


def sqlite_error_of(exc: BaseException) -> sqlite3.Error | None:
    """The ``sqlite3.Error`` behind ``exc``: itself, or the one a wrapper (SQLAlchemy's
    ``OperationalError``, a Dagster error) was raised from."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, sqlite3.Error):
            return current
        seen.add(id(current))
        original = getattr(current, "orig", None)  # SQLAlchemy keeps the driver's error here
        current = (
            original if isinstance(original, BaseException) else current.__cause__ or current.__context__
        )
    return None


def storage_failure(store: SqliteFile, error: sqlite3.Error) -> StorageError | None:
    """The ``StorageError`` for a SQLite error that means the file or its disk failed (full, read-only,
    damaged, unreadable); None for other errors (a locked database, bad SQL)."""
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    reason = f"{error} ({getattr(error, 'sqlite_errorname', 'SQLITE_ERROR')})"
    if primary in _DAMAGED_CODES:
        return StorageError(
            store.path, f"read {store.what}", f"{reason}; the file is damaged", store.if_damaged
        )
    remedy = _STORAGE_CODES.get(primary) if primary is not None else None
    if remedy is None:
        return None
    operation = "open" if primary == sqlite3.SQLITE_CANTOPEN else "write"
    # SQLite's words for a full or read-only disk are often vague ("disk I/O error", "unable to open
    # database file" when it cannot create the -shm file): say what the file system says
    state = _file_system_state(store.path)
    if state == "read-only":
        reason, remedy = f"{reason}; that file system is read-only", "make that file system writable"
    elif state == "full" and primary != sqlite3.SQLITE_FULL:
        reason, remedy = f"{reason}; no space is left on that disk", _STORAGE_CODES[sqlite3.SQLITE_FULL]
    return StorageError(store.path, f"{operation} {store.what}", reason, remedy)


def _file_system_state(path: Path) -> str | None:
    """ "read-only" or "full" for the file system of ``path`` (or of its nearest existing folder)."""
    folder = next((p for p in (path, *path.parents) if p.exists()), None)
    if folder is None:
        return None
    try:
        stats = os.statvfs(folder)
    except OSError:
        return None  # cannot tell: the SQLite error is reported as it is
    if stats.f_flag & os.ST_RDONLY:
        return "read-only"
    return "full" if stats.f_bavail == 0 else None


def open_shared_db(store: SqliteFile, schema: str) -> sqlite3.Connection:
    """A connection usable from several threads (callers hold their own lock), ``schema`` applied."""
    make_folder(store.path.parent)
    with storage_errors_name(store):
        db = sqlite3.connect(store.path, timeout=60, check_same_thread=False, factory=_CacheConnection)
    db.store = store
    _OPEN.add(db)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(schema)
    db.commit()
    return db


@atexit.register
def close_open_dbs() -> None:
    """Closes the connections still open when the interpreter exits, before its last collections: a
    connection held in a reference cycle (the embedding cache's is) is otherwise closed only by those, and
    a process that froze its objects out of them (``cli.entry``) would leave the database's -wal and
    -shm files behind. Closing checkpoints the write-ahead log into the database and removes both."""
    for db in list(_OPEN):
        with suppress(sqlite3.Error):  # in use by a thread still running: the OS closes it at exit
            db.close()
