"""The caches' SQLite database: a full disk or a read-only database names the file, other errors pass."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.embedding.cache import EmbeddingCache
from rag_eval_pipeline.core.errors import StorageError
from rag_eval_pipeline.core.llm.base import Completion
from rag_eval_pipeline.core.llm.cache import ResponseCache


def test_a_full_database_names_its_file_and_keeps_what_it_had(tmp_path: Path):
    path = tmp_path / "cache" / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("model", ["a"], np.ones((1, 384), dtype=np.float32))
    pages = cache._db.execute("PRAGMA page_count").fetchone()[0]
    cache._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full", for real
    with pytest.raises(StorageError) as failed:
        cache.put_many("model", [f"t{i}" for i in range(200)], np.ones((200, 384), dtype=np.float32))
    assert str(failed.value) == (
        f"cannot write cache database {path}: database or disk is full (SQLITE_FULL): free space on that disk"
    )
    assert cache.count() == 1
    cache.close()


def test_a_read_only_database_names_its_file(tmp_path: Path):
    path = tmp_path / "llm_responses.sqlite"
    cache = ResponseCache(path)
    cache._db.execute("PRAGMA query_only = 1")  # SQLite refuses writes as on a read-only file
    with pytest.raises(StorageError) as failed:
        cache.put("key", "model", Completion("text", 1, 1, "model"))
    assert str(failed.value).startswith(
        f"cannot write cache database {path}: attempt to write a readonly database (SQLITE_READONLY): "
    )
    cache.close()


def test_other_sqlite_errors_pass_unchanged(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        cache._db.execute("SELECT * FROM missing")
    cache.close()
