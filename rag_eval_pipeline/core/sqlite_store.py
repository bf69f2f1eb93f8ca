"""The on-disk caches' database: SQLite in WAL mode, so parallel Dagster runs on one machine share it."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def open_shared_db(path: Path, schema: str) -> sqlite3.Connection:
    """A connection usable from several threads (callers hold their own lock), ``schema`` applied."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=60, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(schema)
    db.commit()
    return db
