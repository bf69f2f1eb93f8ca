"""The chunk_index asset run with frames: the chunks of the upstream fixture go into embedded Qdrant and
a BM25 folder under tmp_path; the manifest says what it holds and what it cost, and a second run over
the same chunks embeds and writes nothing."""

from __future__ import annotations

from pathlib import Path

from rag_eval_pipeline.core.chunking.tokenization import cl100k_tokenizer
from rag_eval_pipeline.core.vector_store.base import collection_name
from rag_eval_pipeline.defs.chunking.assets import chunk_index
from rag_eval_pipeline.lib.resources import QdrantResource
from rag_eval_pipeline_tests.defs.conftest import CHUNK_CONFIG, Upstream
from rag_eval_pipeline_tests.defs.frames import run_with_frames
from rag_eval_pipeline_tests.fakes import HashingEmbedder


def test_chunk_index_holds_every_chunk_and_a_rerun_embeds_nothing(upstream: Upstream, tmp_path: Path):
    n_chunks = len(upstream.chunks)
    manifest = upstream.chunk_index.iloc[0]  # the first run, made by the fixture
    collection = collection_name(CHUNK_CONFIG, HashingEmbedder().model_id)
    assert manifest["collection"] == collection and manifest["chunk_config"] == CHUNK_CONFIG
    assert manifest["n_points"] == manifest["texts_embedded"] == n_chunks and manifest["cache_hits"] == 0
    assert manifest["dimension"] == HashingEmbedder().dimension
    assert manifest["chunk_config_hash"] == upstream.chunks["chunk_config_hash"].iloc[0]
    assert manifest["chunk_tokens"] == sum(cl100k_tokenizer().count_tokens(list(upstream.chunks["text"])))
    assert Path(manifest["keyword_index"]).is_dir() and manifest["keyword_index_bytes"] > 0
    qdrant = upstream.resources["qdrant"]
    assert isinstance(qdrant, QdrantResource) and Path(qdrant.local_path).is_relative_to(tmp_path)
    assert qdrant.get().count(collection) == n_chunks  # the store itself, not the manifest's word

    again, metadata = run_with_frames(
        chunk_index, {"chunks": upstream.chunks}, upstream.resources, {"chunk_config": CHUNK_CONFIG}
    )

    assert again["texts_embedded"].tolist() == [0]  # the collection's fingerprint matches: no lookup either
    assert metadata["points_written"] == 0 and metadata["collection_rebuilt"] is False
    assert metadata["keyword_index_rebuilt"] is False and metadata["n_points"] == n_chunks
    assert qdrant.get().count(collection) == n_chunks
