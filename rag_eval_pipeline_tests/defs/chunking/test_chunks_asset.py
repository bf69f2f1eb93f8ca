"""The chunks asset called directly with a corpus frame (no run, no model): it is step 1 of the notebook
API, cut_corpus, plus the provenance columns every later step checks."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
from rag_eval_pipeline.core.configs import load_chunk_configs
from rag_eval_pipeline.core.tables import chunks_from_frame, corpus_to_frame
from rag_eval_pipeline.defs.chunking.assets import chunks
from rag_eval_pipeline_tests.conftest import tiny_corpus, tiny_resources


def test_chunks_cuts_the_corpus_frame_as_cut_corpus_does(tiny_project: Path, tmp_path: Path):
    corpus = tiny_corpus()
    resources = tiny_resources(tiny_project, tmp_path)
    context = dg.build_asset_context(
        partition_key="recursive-120-20",
        resources={"project": resources["project"], "embedder": resources["embedder"]},
    )

    result = chunks(context, corpus=corpus_to_frame(corpus))

    config = next(
        c
        for c in load_chunk_configs(tiny_project / "data/chunk_configs.yaml")
        if c.name == "recursive-120-20"
    )
    chunker = build_chunker(config)
    expected = cut_corpus(chunker, corpus.documents, config.name).chunks
    frame = result.value
    assert tuple(chunks_from_frame(frame)) == expected and len(expected) > len(corpus.documents)
    assert set(frame["chunk_config"]) == {"recursive-120-20"}
    assert set(frame["chunk_config_hash"]) == {config.config_hash}
    assert set(frame["chunker_fingerprint"]) == {chunker.fingerprint}
    assert set(frame["corpus_sha256"]) == {corpus.sha256}
    metadata = {k: getattr(v, "value", v) for k, v in (result.metadata or {}).items()}
    assert metadata["n_chunks"] == len(expected)
    assert metadata["max_chunk_chars"] == max(c.end - c.start for c in expected) <= 120
    # the data version changes with the corpus or the config, so downstream shows stale when either does
    assert result.data_version is not None
