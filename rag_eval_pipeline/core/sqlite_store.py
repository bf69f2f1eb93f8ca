"""The on-disk caches' database: SQLite in WAL mode, so parallel Dagster runs on one machine share it.

SQLite reports a full disk or a read-only file as "database or disk is full" / "attempt to write a
readonly database", without the file; the connection here raises ``StorageError`` naming the database
(and so does the local Qdrant folder, whose storage is SQLite too).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import StorageError
from .files import make_folder, storage_error

# Primary result codes (the low byte of an extended code) that mean the storage, not the SQL, failed.
_STORAGE_CODES = {
    sqlite3.SQLITE_FULL: "free space on that disk",
    sqlite3.SQLITE_READONLY: "make that file and its folder writable",
    sqlite3.SQLITE_CANTOPEN: "make that folder writable",
    sqlite3.SQLITE_IOERR: "check that disk",
    sqlite3.SQLITE_PERM: "give this user write permission there",
}


class _CacheConnection(sqlite3.Connection):
    """A connection whose storage failures name its file."""

    path: Path

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        with storage_errors_name(self.path):
            return super().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        with storage_errors_name(self.path):
            return super().executemany(sql, parameters)

    def commit(self) -> None:
        with storage_errors_name(self.path):
            super().commit()


@contextmanager
def storage_errors_name(path: Path, what: str = "cache database") -> Iterator[None]:
    """A full or read-only disk, reported by SQLite or the OS, raises ``StorageError`` naming ``path``
    (``what`` says what it is); other errors (a locked database, bad SQL) pass unchanged."""
    try:
        yield
    except StorageError:
        raise
    except OSError as exc:
        raise storage_error(path, f"write {what}", exc) from exc
    except sqlite3.Error as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        remedy = _STORAGE_CODES.get(primary) if primary is not None else None
        if remedy is None:
            raise
        operation = "open" if primary == sqlite3.SQLITE_CANTOPEN else "write"
        reason = f"{exc} ({exc.sqlite_errorname})"
        # SQLite's words for a full or read-only disk are often vague ("disk I/O error", "unable to
        # open database file" when it cannot create the -shm file): say what the file system says
        state = _file_system_state(path)
        if state == "read-only":
            reason, remedy = f"{reason}; that file system is read-only", "make that file system writable"
        elif state == "full" and primary != sqlite3.SQLITE_FULL:
            reason, remedy = f"{reason}; no space is left on that disk", _STORAGE_CODES[sqlite3.SQLITE_FULL]
        raise StorageError(path, f"{operation} {what}", reason, remedy) from exc


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


def open_shared_db(path: Path, schema: str) -> sqlite3.Connection:
    """A connection usable from several threads (callers hold their own lock), ``schema`` applied."""
    make_folder(path.parent)
    with storage_errors_name(path):
        db = sqlite3.connect(path, timeout=60, check_same_thread=False, factory=_CacheConnection)
    db.path = path
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(schema)
    db.commit()
    return db
