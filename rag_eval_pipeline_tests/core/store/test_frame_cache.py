"""A warehouse file is decoded once per process while it is unchanged; a replaced or rewritten file is read
again, a reader's changes reach no other reader, and the cache stays within its bytes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.errors import StorageError
from rag_eval_pipeline.core.store import warehouse
from rag_eval_pipeline.core.store.frame_cache import FileSignature, FrameCache
from rag_eval_pipeline.core.store.warehouse import Warehouse

PARTITION = {"chunk_config": "fixed-200-0"}


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch) -> FrameCache:
    """A cache of this test's own (the process' one keeps other tests' files)."""
    fresh = FrameCache()
    monkeypatch.setattr(warehouse, "PROCESS_FRAMES", fresh)
    return fresh


def chunks(*texts: str) -> pd.DataFrame:
    return pd.DataFrame({"chunk_id": [f"c{i}" for i in range(len(texts))], "text": list(texts)})


def test_an_unchanged_file_is_decoded_once_and_a_replaced_one_again(tmp_path: Path, cache: FrameCache):
    w = Warehouse(tmp_path)
    path = w.write_table(chunks("a", "b"), "chunks", PARTITION, "run-1")
    first, second = w.read_file(path), Warehouse(tmp_path).read_file(path)  # any Warehouse of the process
    assert cache.reads == 1
    pd.testing.assert_frame_equal(first, second)
    w.write_table(chunks("a", "b", "c"), "chunks", PARTITION, "run-2")
    assert list(w.read_file(path)["text"]) == ["a", "b", "c"] and cache.reads == 2
    assert list(w.read_current("chunks", PARTITION)["text"]) == ["a", "b", "c"] and cache.reads == 2


def test_a_file_written_in_place_is_read_again(tmp_path: Path, cache: FrameCache):
    w = Warehouse(tmp_path)
    path = w.write_table(chunks("a"), "chunks", PARTITION, "run-1")
    w.read_file(path)
    other = w.write_table(chunks("b"), "chunks", {"chunk_config": "other"}, "run-1")
    path.write_bytes(other.read_bytes())  # same inode, new bytes
    assert list(w.read_file(path)["text"]) == ["b"] and cache.reads == 2


def test_a_reader_s_changes_reach_no_other_reader(tmp_path: Path, cache: FrameCache):
    w = Warehouse(tmp_path)
    path = w.write_table(chunks("a", "b"), "chunks", PARTITION, "run-1")
    mine = w.read_file(path)
    mine["text"] = mine["text"].str.upper()
    mine.loc[0, "chunk_id"] = "changed"
    mine["added"] = 1
    theirs = w.read_file(path)
    assert cache.reads == 1
    assert list(theirs.columns) == ["chunk_id", "text"]
    assert list(theirs["chunk_id"]) == ["c0", "c1"] and list(theirs["text"]) == ["a", "b"]


def test_a_file_damaged_after_it_was_read_is_named_as_before(tmp_path: Path, cache: FrameCache):
    w = Warehouse(tmp_path)
    path = w.write_table(chunks("a"), "chunks", PARTITION, "run-1")
    w.read_file(path)
    path.write_bytes(b"not parquet")
    with pytest.raises(StorageError, match="rag-eval run --force"):
        w.read_file(path)
    path.unlink()
    with pytest.raises(FileNotFoundError):
        w.read_file(path)


def test_the_least_recently_used_files_go_past_the_byte_limit(tmp_path: Path):
    w = Warehouse(tmp_path)
    paths = [w.write_table(chunks(str(i)), "chunks", {"chunk_config": f"c{i}"}, "run") for i in range(3)]
    size = max(p.stat().st_size for p in paths)
    cache = FrameCache(max_bytes=2 * size)
    for path in paths[:2]:
        cache.read(path, pd.read_parquet)
    cache.read(paths[0], pd.read_parquet)  # the first is now the most recent
    cache.read(paths[2], pd.read_parquet)  # ...so the second goes
    assert cache.reads == 3
    cache.read(paths[0], pd.read_parquet)
    assert cache.reads == 3
    cache.read(paths[1], pd.read_parquet)
    assert cache.reads == 4
    huge = FrameCache(max_bytes=size - 1)  # a file over the limit is never kept
    huge.read(paths[0], pd.read_parquet)
    huge.read(paths[0], pd.read_parquet)
    assert huge.reads == 2


def test_the_warehouse_s_own_write_is_seen_even_with_the_same_signature(
    tmp_path: Path, cache: FrameCache, monkeypatch: pytest.MonkeyPatch
):
    w = Warehouse(tmp_path)
    path = w.write_table(chunks("a"), "chunks", PARTITION, "run-1")
    same = FileSignature(1, 2, 3, 4, 5)  # a rewrite in the same clock tick into a reused inode
    monkeypatch.setattr(FileSignature, "of", classmethod(lambda cls, path: same))
    w.read_file(path)
    w.write_table(chunks("b"), "chunks", PARTITION, "run-2")
    assert list(w.read_file(path)["text"]) == ["b"] and cache.reads == 2
