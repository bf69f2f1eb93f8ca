import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.embedding.base import Vectors
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache, even_slices
from rag_eval_pipeline_tests.fakes import HashingEmbedder


def test_only_unseen_texts_reach_the_model_and_vectors_match(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    inner = HashingEmbedder()
    first = CachedEmbedder(inner, cache, texts_per_call=2)
    vectors = first.embed(["a b", "c d", "a b", "e f"])
    assert first.texts_embedded == 3  # the repeated text is embedded once
    assert np.allclose(vectors[0], vectors[2])
    np.testing.assert_allclose(vectors, inner.embed(["a b", "c d", "a b", "e f"]))

    second = CachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "e.sqlite"))
    again = second.embed(["e f", "a b", "new text"])
    assert second.texts_embedded == 1 and second.cache_hits == 2
    np.testing.assert_allclose(again[:2], vectors[[3, 0]])


def test_cache_is_keyed_by_model(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    CachedEmbedder(HashingEmbedder(model_id="m1"), cache).embed(["x"])
    other = CachedEmbedder(HashingEmbedder(model_id="m2"), cache)
    other.embed(["x"])
    assert other.texts_embedded == 1
    assert cache.count("m1") == 1 and cache.count() == 2


def test_progress_is_reported_per_call_of_near_equal_size(tmp_path: Path):
    seen = []
    inner = HashingEmbedder()
    embedder = CachedEmbedder(
        inner,
        EmbeddingCache(tmp_path / "e.sqlite"),
        texts_per_call=2,
        progress=lambda stage, done, total: seen.append((done, total)),
    )
    embedder.embed(["a", "b", "c", "d", "e"])
    assert seen == [(0, 5), (2, 5), (4, 5), (5, 5)]
    assert inner.calls == 3
    assert embedder.embed([]).shape == (0, 64)
    assert [len(s) for s in even_slices(range(600), 512)] == [300, 300]
    assert [len(s) for s in even_slices(range(7), 3)] == [3, 2, 2]
    assert even_slices([], 3) == []


def test_all_missing_texts_go_to_the_model_in_one_call(tmp_path: Path):
    """One call to the model for every text an embed call misses (the model batches inside it), each
    distinct text once; what is cached is never sent again, from this embedder or another process's."""
    texts = [f"text number {i}" for i in range(300)]
    inner = HashingEmbedder()
    embedder = CachedEmbedder(inner, EmbeddingCache(tmp_path / "e.sqlite"))
    embedder.embed(texts + texts[:50])
    assert (inner.calls, inner.texts_seen, embedder.texts_embedded) == (1, 300, 300)

    later = HashingEmbedder()
    CachedEmbedder(later, EmbeddingCache(tmp_path / "e.sqlite")).embed([*texts[::-1], "one more"])
    assert (later.calls, later.texts_seen) == (1, 1)


def test_a_reply_of_the_wrong_length_is_refused(tmp_path: Path):
    class Short(HashingEmbedder):
        def embed(self, texts: Sequence[str]) -> Vectors:
            return super().embed(texts)[:-1]

    with pytest.raises(ValueError, match="returned 1 vectors for 2 texts"):
        CachedEmbedder(Short(), EmbeddingCache(tmp_path / "e.sqlite")).embed(["a", "b"])
    with pytest.raises(ValueError, match="texts_per_call"):
        CachedEmbedder(Short(), EmbeddingCache(tmp_path / "e.sqlite"), texts_per_call=0)


_WRITER = """
import sys
import numpy as np
from rag_eval_pipeline.core.embedding.cache import EmbeddingCache
cache = EmbeddingCache(sys.argv[1])
name = sys.argv[2]
for batch in range(100):
    digests = [f"{name}-{batch}-{i}" for i in range(10)]
    cache.put_many("m", digests, np.full((10, 4), batch, dtype=np.float32))
    assert len(cache.get_many("m", digests)) == 10
"""


def test_two_processes_write_one_cache_at_once(tmp_path: Path):
    """Two Dask workers (or runs) on one machine share the cache file: WAL and the busy timeout make
    their writes take turns instead of failing with "database is locked"."""
    import subprocess
    import sys

    path = tmp_path / "e.sqlite"
    EmbeddingCache(path).close()  # the file and its WAL mode exist before the writers race
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name], stderr=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    results = [(writer.wait(120), writer.stderr.read() if writer.stderr else "") for writer in writers]
    assert results == [(0, ""), (0, "")]
    assert EmbeddingCache(path).count("m") == 2000


def test_a_vector_read_or_written_once_is_served_from_the_process(tmp_path: Path):
    """Each step opens the cache anew; the vectors a process has read or written are kept for it (the
    SQLite lookups repeated across a run's steps): another opening of the same cache finds them without
    its database, and a cache deleted and made anew at the same path is another cache."""
    path = tmp_path / "cache.sqlite"
    vectors = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    EmbeddingCache(path).put_many("m", ["a", "b", "c"], vectors)
    with sqlite3.connect(path) as raw:  # the database loses the rows: only the process has them now
        raw.execute("DELETE FROM embeddings")
    again = EmbeddingCache(path)
    found = again.get_many("m", ["c", "a", "z"])
    assert sorted(found) == ["a", "c"] and np.array_equal(found["c"], vectors[2])
    assert not found["a"].flags.writeable  # as a read from the database gives it
    assert again.get_many("other-model", ["a"]) == {}
    again.close()
    for leftover in tmp_path.glob("cache.sqlite*"):
        leftover.unlink()
    assert EmbeddingCache(path).get_many("m", ["a", "b", "c"]) == {}  # made anew: nothing of the old one
