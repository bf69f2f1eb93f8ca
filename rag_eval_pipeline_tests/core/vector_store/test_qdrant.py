"""Real Qdrant (embedded local mode) behind the VectorStore protocol."""

import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.types import ChunkId, DocumentId, PositionAwareChunk
from rag_eval_pipeline.core.vector_store.base import VectorStore, collection_name
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore


def make_chunks(n: int) -> tuple[list[PositionAwareChunk], np.ndarray]:
    chunks = [
        PositionAwareChunk(ChunkId(f"pa_chunk_{i:04d}"), DocumentId("d.md"), 10 * i, 10 * i + 3, "abc")
        for i in range(n)
    ]
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(n, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chunks, vectors


def test_search_matches_exact_cosine_and_payload_round_trips(tmp_path: Path):
    store = QdrantVectorStore(path=tmp_path)
    assert isinstance(store, VectorStore)
    chunks, vectors = make_chunks(300)
    store.replace_collection("c", chunks, vectors, "cfg")
    assert store.count("c") == 300
    queries = vectors[:4] + 0.05
    results = store.search("c", queries, 5)
    expected = np.argsort(-(vectors @ queries.T), axis=0, kind="stable")[:5].T
    assert [[h.chunk_id for h in row] for row in results] == [
        [chunks[i].chunk_id for i in row] for row in expected
    ]
    top = results[0][0]
    assert (top.doc_id, top.start, top.end, top.text) == ("d.md", 0, 3, "abc")


def test_replace_collection_drops_old_points_and_ties_go_in_document_order(tmp_path: Path):
    store = QdrantVectorStore(path=tmp_path)
    chunks, vectors = make_chunks(10)
    store.replace_collection("c", chunks, vectors, "cfg")
    # three copies of one passage, whose chunk ids sort against their places in the document
    copies = [replace(c, chunk_id=ChunkId(f"pa_chunk_{9 - i:04d}")) for i, c in enumerate(chunks[:3])]
    same = np.tile(vectors[:1], (3, 1))
    store.replace_collection("c", copies[::-1], same, "cfg")
    assert store.count("c") == 3
    assert [h.chunk_id for h in store.search("c", vectors[:1], 3)[0]] == [c.chunk_id for c in copies]
    assert [h.chunk_id for h in store.search("c", vectors[:1], 1)[0]] == [copies[0].chunk_id]


def test_a_collection_of_the_same_dimension_is_updated_in_place(tmp_path: Path):
    from dataclasses import replace

    store = QdrantVectorStore(path=tmp_path)
    chunks, vectors = make_chunks(40)
    assert store.replace_collection("c", chunks, vectors, "cfg", "fp-1") == 40
    assert store.replace_collection("c", chunks, vectors, "cfg", "fp-1") == 0
    edited = [replace(chunks[0], text="xyz"), *chunks[1:30]]
    assert store.replace_collection("c", edited, vectors[:30], "cfg", "fp-2") == 1
    assert store.count("c") == 30 and store.fingerprint("c") == "fp-2"
    assert store.search("c", vectors[:1], 1)[0][0].text == "xyz"


def test_errors_are_clear(tmp_path: Path):
    store = QdrantVectorStore(path=tmp_path)
    with pytest.raises(LookupError, match="materialize chunk_index"):
        store.search("missing", np.zeros((1, 4), dtype=np.float32), 3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        store.search("missing", np.zeros((1, 4), dtype=np.float32), 0)
    with pytest.raises(ValueError, match="exactly one of"):
        QdrantVectorStore()


def test_a_second_process_waits_for_the_local_folder_lock(tmp_path: Path):
    from qdrant_client import QdrantClient

    store = QdrantVectorStore(path=tmp_path, lock_timeout=30)
    chunks, vectors = make_chunks(5)
    store.replace_collection("c", chunks, vectors, "cfg")
    holder = QdrantClient(path=str(tmp_path / "c"))  # another "run" holds the folder
    waited = []
    store._log = waited.append
    releaser = threading.Timer(1.0, holder.close)
    releaser.start()
    started = time.monotonic()
    assert store.count("c") == 5
    assert time.monotonic() - started >= 0.5 and waited


def test_collection_names_are_safe():
    assert collection_name("recursive-400-50", "sentence-transformers/all-MiniLM-L6-v2") == (
        "rag_eval__recursive-400-50__sentence-transformers-all-MiniLM-L6-v2"
    )


def test_a_session_opens_a_local_collection_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    store = QdrantVectorStore(path=tmp_path)
    chunks, vectors = make_chunks(20)
    store.replace_collection("c", chunks, vectors, "cfg")
    opened = []
    original = store._open_local
    monkeypatch.setattr(store, "_open_local", lambda folder: opened.append(folder) or original(folder))
    with store.session("c"):
        for _ in range(3):
            store.search("c", vectors[:2], 2)
    assert len(opened) == 1
    store.search("c", vectors[:2], 2)  # outside a session each call opens (and releases) the folder
    assert len(opened) == 2


def test_server_mode_sends_the_api_key_to_the_url(tmp_path: Path):
    """No Qdrant server can be installed here, so a listener records what server mode sends: the same
    store code, only the client is built with url= and api_key= (QDRANT_URL, QDRANT_API_KEY)."""
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from rag_eval_pipeline.lib.resources import QdrantResource

    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("api-key")))
            # "/" is the client's version check, sent from a thread of its own at any moment
            reply = (
                {"title": "qdrant", "version": "1.16.0"}
                if self.path == "/"
                else {"result": {"exists": False}}
            )
            body = json.dumps({**reply, "status": "ok", "time": 0.0}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        store = QdrantResource(url=url, api_key="qdrant-secret", local_path=str(tmp_path)).get()
        assert store.location == url and store.path is None
        with pytest.raises(LookupError, match=f"does not exist at {url}: build the index first"):
            store.search("rag_eval__fixed__minilm", np.zeros((1, 4), dtype=np.float32), 3)
        store.close()
    finally:
        server.shutdown()
    assert ("/collections/rag_eval__fixed__minilm/exists", "qdrant-secret") in seen
    assert {key for _, key in seen} == {"qdrant-secret"}
    assert not list(tmp_path.iterdir())  # nothing written locally in server mode


def test_a_server_error_that_quotes_the_api_key_is_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A gateway in front of a Qdrant server answers 403 quoting the key: the error the step raises (and
    so the step-failure message) carries the marker instead."""
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    key = "qdrant-Kx72mVq9Lp41ZtR8"
    monkeypatch.setenv("QDRANT_API_KEY", key)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps(
                {"status": {"error": f"forbidden: api-key {self.headers.get('api-key')}"}}
            ).encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = QdrantVectorStore(url=f"http://127.0.0.1:{server.server_address[1]}", api_key=key)
        with pytest.raises(Exception) as raised:
            store.collection_exists("rag_eval__fixed__minilm")
        store.close()
    finally:
        server.shutdown()
    assert "forbidden: api-key [redacted QDRANT_API_KEY]" in str(raised.value)
    assert key[:10] not in str(raised.value)
