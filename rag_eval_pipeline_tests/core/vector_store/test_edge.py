"""Qdrant's in-process engine (qdrant-edge) behind the VectorStore protocol, on real shards in tmp."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.types import ChunkId
from rag_eval_pipeline.core.vector_store import edge as edge_module
from rag_eval_pipeline.core.vector_store.base import VectorStore
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
from rag_eval_pipeline_tests.core.vector_store.test_qdrant import make_chunks


def hits(results: list[list[object]]) -> list[list[tuple[str, float]]]:
    return [[(h.chunk_id, round(h.score, 6)) for h in row] for row in results]  # type: ignore[attr-defined]


def test_search_matches_exact_cosine_and_payload_round_trips(tmp_path: Path):
    store = EdgeVectorStore(tmp_path)
    assert isinstance(store, VectorStore)
    chunks, vectors = make_chunks(300)
    assert store.replace_collection("c", chunks, vectors, "cfg") == 300
    assert store.count("c") == 300 and store.collection_exists("c")
    queries = vectors[:4] + 0.05
    results = store.search("c", queries, 5)
    expected = np.argsort(-(vectors @ queries.T), axis=0, kind="stable")[:5].T
    assert [[h.chunk_id for h in row] for row in results] == [
        [chunks[i].chunk_id for i in row] for row in expected
    ]
    top = results[0][0]
    assert (top.doc_id, top.start, top.end, top.text) == ("d.md", 0, 3, "abc")
    assert store.search("c", vectors[:0], 5) == []


def test_replace_collection_drops_old_points_and_ties_go_in_document_order(tmp_path: Path):
    store = EdgeVectorStore(tmp_path)
    chunks, vectors = make_chunks(10)
    store.replace_collection("c", chunks, vectors, "cfg")
    # three copies of one passage, whose chunk ids sort against their places in the document
    copies = [replace(c, chunk_id=ChunkId(f"pa_chunk_{9 - i:04d}")) for i, c in enumerate(chunks[:3])]
    same = np.tile(vectors[:1], (3, 1))
    store.replace_collection("c", copies[::-1], same, "cfg")
    assert store.count("c") == 3
    assert [h.chunk_id for h in store.search("c", vectors[:1], 3)[0]] == [c.chunk_id for c in copies]
    assert [h.chunk_id for h in store.search("c", vectors[:1], 1)[0]] == [copies[0].chunk_id]


def test_the_fingerprint_is_kept_only_once_every_point_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    store = EdgeVectorStore(tmp_path)
    chunks, vectors = make_chunks(600)  # three upsert batches
    assert store.fingerprint("c") is None
    store.replace_collection("c", chunks, vectors, "cfg", "fp-1")
    assert store.fingerprint("c") == "fp-1"

    def failing_batches(indices: list[int]) -> object:
        yield indices[:256]
        raise KeyboardInterrupt  # the run is stopped after the first batch

    monkeypatch.setattr(edge_module, "batches", failing_batches)
    changed = vectors[::-1].copy()
    with pytest.raises(KeyboardInterrupt):
        store.replace_collection("c", chunks, changed, "cfg", "fp-2")
    assert store.fingerprint("c") is None  # neither the old fingerprint nor the new one
    monkeypatch.undo()
    # the next write finishes the job: only the points not written before are written
    assert store.replace_collection("c", chunks, changed, "cfg", "fp-2") == 600 - 256
    assert store.fingerprint("c") == "fp-2" and store.count("c") == 600


def test_an_edited_document_rewrites_only_its_chunks_and_searches_like_a_full_rebuild(tmp_path: Path):
    chunks, vectors = make_chunks(300)
    store = EdgeVectorStore(tmp_path / "updated")
    store.replace_collection("c", chunks, vectors, "cfg")
    assert store.replace_collection("c", chunks, vectors, "cfg") == 0  # nothing changed
    # one document edited: two chunks change text, one changes place, one is gone, one is new
    edited = list(chunks)
    edited[5] = replace(edited[5], text="xyz")
    edited[6] = replace(edited[6], text="def")
    edited[7] = replace(edited[7], start=edited[7].start + 1, end=edited[7].end + 1)
    del edited[8]
    new_vectors = np.delete(vectors, 8, axis=0)
    new_vectors[5] = -new_vectors[5]
    edited.append(replace(chunks[0], chunk_id=type(chunks[0].chunk_id)("pa_chunk_new"), start=5000, end=5003))
    new_vectors = np.vstack([new_vectors, vectors[:1] * 0.5])
    assert store.replace_collection("c", edited, new_vectors, "cfg") == 4
    assert store.count("c") == 300

    full = EdgeVectorStore(tmp_path / "full")
    full.replace_collection("c", edited, new_vectors, "cfg")
    queries = np.vstack([vectors[:6], new_vectors[-1:]]) + 0.01
    updated_hits, full_hits = store.search("c", queries, 10), full.search("c", queries, 10)
    assert updated_hits == full_hits
    assert "pa_chunk_new" in {h.chunk_id for row in updated_hits for h in row}


def test_errors_are_clear(tmp_path: Path):
    store = EdgeVectorStore(tmp_path)
    with pytest.raises(LookupError, match="rag_eval__x does not exist at edge:.*materialize chunk_index"):
        store.search("rag_eval__x", np.zeros((1, 4), dtype=np.float32), 3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        store.search("c", np.zeros((1, 4), dtype=np.float32), 0)
    chunks, vectors = make_chunks(3)
    with pytest.raises(ValueError, match="3 chunks but 2 vectors"):
        store.replace_collection("c", chunks, vectors[:2], "cfg")
    assert store.count("missing") == 0 and not store.collection_exists("missing")
    assert not list(tmp_path.iterdir())  # reading a missing collection creates nothing


def test_a_disk_error_names_the_collection_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from rag_eval_pipeline.core.errors import StorageError

    store = EdgeVectorStore(tmp_path)
    chunks, vectors = make_chunks(5)

    def full_disk(*args: object) -> object:
        raise Exception(
            "Service runtime error: failed to write segment: No space left on device (os error 28)"
        )

    monkeypatch.setattr(edge_module.EdgeShard, "create", full_disk)
    with pytest.raises(StorageError, match=f"{tmp_path / 'c'}.*No space left on device.*free space"):
        store.replace_collection("c", chunks, vectors, "cfg")


def test_a_second_process_on_the_same_collection_waits_and_another_collection_does_not(tmp_path: Path):
    """flock locks belong to an open file, so a second store in this process stands for another run."""
    chunks, vectors = make_chunks(5)
    first = EdgeVectorStore(tmp_path)
    first.replace_collection("a", chunks, vectors, "cfg")
    first.replace_collection("b", chunks, vectors, "cfg")
    waited: list[str] = []
    second = EdgeVectorStore(tmp_path, lock_timeout=30, log=waited.append)
    with ExitStack() as holding:
        holding.enter_context(first.session("a"))
        assert second.count("b") == 5 and not waited  # another collection: no wait
        releaser = threading.Timer(1.0, holding.pop_all().close)
        releaser.start()
        started = time.monotonic()
        assert second.count("a") == 5
    assert time.monotonic() - started >= 0.5
    assert waited == [f"waiting for the Qdrant collection folder {tmp_path / 'a'} (in use by another run)"]
    impatient = EdgeVectorStore(tmp_path, lock_timeout=0.2)
    with first.session("a"), pytest.raises(RuntimeError, match="held by another process for more than"):
        impatient.count("a")


def test_a_session_keeps_the_shard_open_and_can_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = EdgeVectorStore(tmp_path)
    chunks, vectors = make_chunks(20)
    store.replace_collection("c", chunks, vectors, "cfg")
    loads: list[Path] = []
    original = edge_module._load
    monkeypatch.setattr(edge_module, "_load", lambda folder: loads.append(folder) or original(folder))
    with store.session("c"):
        for _ in range(3):
            store.search("c", vectors[:2], 2)
        assert store.replace_collection("c", chunks[:10], vectors[:10], "cfg", "fp") == 0
        assert store.count("c") == 10
    assert len(loads) == 1 and store.fingerprint("c") == "fp"


def test_vectors_of_another_dimension_make_the_collection_anew(tmp_path: Path):
    store = EdgeVectorStore(tmp_path)
    chunks, vectors = make_chunks(10)
    store.replace_collection("c", chunks, vectors, "cfg")
    wider = np.hstack([vectors, vectors])
    assert store.replace_collection("c", chunks, wider, "cfg") == 10
    assert store.search("c", wider[:1], 1)[0][0].chunk_id == chunks[0].chunk_id


def test_a_qdrant_client_local_folder_is_kept_and_the_edge_collection_built_beside_it(tmp_path: Path):
    chunks, vectors = make_chunks(30)
    QdrantVectorStore(path=tmp_path).replace_collection("c", chunks, vectors, "cfg", "fp")
    said: list[str] = []
    store = EdgeVectorStore(tmp_path, log=said.append)
    assert not store.collection_exists("c") and store.fingerprint("c") is None and store.count("c") == 0
    with pytest.raises(LookupError, match="materialize chunk_index"):
        store.search("c", vectors[:1], 1)
    assert store.replace_collection("c", chunks, vectors, "cfg", "fp") == 30
    assert len(said) == 1 and "holds a collection of qdrant-client's local mode; it is kept" in said[0]
    # both engines answer alike, each from its own files in the folder
    local = QdrantVectorStore(path=tmp_path)
    assert local.fingerprint("c") == store.fingerprint("c") == "fp"
    edge_hits, local_hits = store.search("c", vectors[:5], 5), local.search("c", vectors[:5], 5)
    assert [[h.chunk_id for h in row] for row in edge_hits] == [
        [h.chunk_id for h in row] for row in local_hits
    ]
    store.replace_collection("c", chunks, vectors, "cfg", "fp")
    assert sum("qdrant-client's local mode" in line for line in said) == 1  # said once


def test_the_hnsw_option_searches_an_index_and_finds_the_exact_hits_on_a_small_collection(tmp_path: Path):
    chunks, vectors = make_chunks(300)
    approximate = EdgeVectorStore(tmp_path / "hnsw", exact=False)
    exact = EdgeVectorStore(tmp_path / "exact")
    approximate.replace_collection("c", chunks, vectors, "cfg")
    exact.replace_collection("c", chunks, vectors, "cfg")
    with approximate.session("c"), exact.session("c"):
        assert approximate._pinned["c"].info().indexed_vectors_count == 300
        assert exact._pinned["c"].info().indexed_vectors_count == 0
    queries = vectors[:10] + 0.05
    assert hits(approximate.search("c", queries, 5)) == hits(exact.search("c", queries, 5))
