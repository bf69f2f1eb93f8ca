"""The caches' SQLite database: a full disk, a read-only or a damaged database names the file and what to
do, other errors pass; what a cache stores holds no configured secret."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
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
        f"cannot write embedding cache {path}: database or disk is full (SQLITE_FULL): free space on that disk"
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
        f"cannot write LLM response cache {path}: attempt to write a readonly database (SQLITE_READONLY): "
    )
    cache.close()


def test_other_sqlite_errors_pass_unchanged(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        cache._db.execute("SELECT * FROM missing")
    cache.close()


def _damage(database: Path) -> None:
    """Every page but the header page overwritten: SQLite finds the damage on the first read."""
    size = database.stat().st_size
    with database.open("r+b") as file:
        file.seek(4096)
        file.write(bytes(range(256)) * ((size - 4096) // 256 + 1))


@pytest.mark.parametrize(
    ("make", "fill", "read", "cost"),
    [
        (
            EmbeddingCache,
            lambda c: c.put_many("m", [f"t{i}" for i in range(300)], np.ones((300, 384), dtype=np.float32)),
            lambda c: c.get_many("m", [f"t{i}" for i in range(300)]),
            "embedding cache {path}: database disk image is malformed (SQLITE_CORRUPT); the file is damaged: "
            "delete it (with its -wal and -shm files, if any): that costs only re-embedding the texts, which "
            "the next run does by itself",
        ),
        (
            ResponseCache,
            lambda c: [c.put(f"k{i}", "m", Completion("x" * 500, 1, 1, "m")) for i in range(100)],
            lambda c: c.get("k50"),
            "LLM response cache {path}: database disk image is malformed (SQLITE_CORRUPT); the file is "
            "damaged: delete it (with its -wal and -shm files, if any): that costs only asking the LLM again "
            "(paid calls for a paid model), which the next run does by itself",
        ),
    ],
)
def test_a_damaged_cache_names_its_file_and_what_deleting_it_costs(
    tmp_path: Path, make: type, fill: object, read: object, cost: str
):
    path = tmp_path / "cache.sqlite"
    cache = make(path)
    fill(cache)  # type: ignore[operator]
    cache.close()  # checkpointed: the rows are in the file
    _damage(path)
    with pytest.raises(StorageError) as failed:
        reopened = make(path)
        read(reopened)  # type: ignore[operator]
    assert str(failed.value) == "cannot read " + cost.format(path=path)


def test_a_file_that_is_no_database_is_named_too(tmp_path: Path):
    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(b"not a database at all, " * 300)
    with pytest.raises(StorageError, match=rf"cannot read embedding cache {path}: file is not a database"):
        EmbeddingCache(path)


def test_damage_found_while_iterating_rows_names_the_file(tmp_path: Path):
    """A lookup reads a table page by page as its rows are iterated: the damage may show only then."""
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("m", [f"t{i}" for i in range(2000)], np.ones((2000, 384), dtype=np.float32))
    cursor = cache._db.execute("SELECT vector FROM embeddings")
    cursor.fetchone()
    with path.open("r+b") as file:  # the rows after the first page, damaged under the open cursor
        file.seek(4096 * 40)
        file.write(b"\xff" * 4096 * 200)
    with pytest.raises(StorageError, match=rf"cannot read embedding cache {path}: "):
        for _ in cursor:
            pass
    cache.close()


KEY = "sk-proj-Hx83JqWv5Nc2Lr7Tb4Kz9Df1Gs6Ym0Pa3Ue8Oi"


def test_a_secret_in_what_a_cache_stores_is_stored_as_its_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "llm_responses.sqlite"
    cache = ResponseCache(path)
    cache.put("key", "openai:gpt-4o-mini", Completion(f"the server says: Bearer {KEY}", 3, 4, KEY))
    stored = cache.get("key")
    cache.close()
    assert stored == Completion(
        "the server says: Bearer [redacted OPENAI_API_KEY]", 3, 4, "[redacted OPENAI_API_KEY]"
    )
    assert not any(KEY[:12].encode() in p.read_bytes() for p in tmp_path.iterdir())


def test_a_process_that_froze_its_objects_still_closes_a_cache_held_in_a_cycle_at_exit(tmp_path: Path):
    """`rag-eval` freezes its objects out of the exit's collections (cli.entry); an embedding cache held
    in a reference cycle is closed at exit all the same: its write-ahead log is checkpointed into the
    database and its -wal and -shm files are gone."""
    path = tmp_path / "embeddings.sqlite"
    script = f"""
import gc
import numpy as np
from rag_eval_pipeline.core.embedding.cache import EmbeddingCache
cache = EmbeddingCache({str(path)!r})
cache.put_many("model", ["a", "b"], np.ones((2, 384), dtype=np.float32))
cache.cycle = cache  # only a collection would free it
gc.freeze()
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["embeddings.sqlite"]
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM embeddings").fetchone() == (2,)
