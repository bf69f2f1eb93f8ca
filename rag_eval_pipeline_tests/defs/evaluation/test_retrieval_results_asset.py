"""The retrieval_results asset run with frames over the indexes chunk_index built (embedded Qdrant and
BM25 under tmp_path, the hashing embedder): the profile's top k per question, chunks exactly as cut, the
provenance every later step checks, and the keyword retriever's first hit where a reader expects it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rag_eval_pipeline.defs.evaluation.assets import retrieval_results
from rag_eval_pipeline_tests.conftest import TINY_DOCS, TINY_PROFILES
from rag_eval_pipeline_tests.defs.conftest import CHUNK_CONFIG, Upstream
from rag_eval_pipeline_tests.defs.frames import run_with_frames

# keyword only: its first hit for a question is the chunk sharing the question's rarest words
KEYWORD_PROFILE = "  - name: words\n    top_k: 1\n    vector_weight: 0\n    keyword_weight: 1\n"


def retrieve(upstream: Upstream, profile: str) -> tuple[pd.DataFrame, dict[str, object]]:
    return run_with_frames(
        retrieval_results,
        {
            "chunk_index": upstream.chunk_index,
            "chunks": upstream.chunks,
            "eval_questions": upstream.eval_questions,
        },
        upstream.resources,
        {"chunk_config": CHUNK_CONFIG, "profile": profile},
    )


def test_every_question_gets_the_profiles_top_k_chunks_as_they_were_cut(upstream: Upstream):
    frame, metadata = retrieve(upstream, "top2")

    questions = upstream.eval_questions["question_id"].tolist()
    assert frame.groupby("question_id")["rank"].apply(list).to_dict() == {q: [1, 2] for q in questions}
    cut = upstream.chunks.set_index("chunk_id")
    for row in frame.itertuples():
        chunk = cut.loc[row.chunk_id]
        assert (row.doc_id, row.start, row.end) == (chunk["doc_id"], chunk["start"], chunk["end"])
        assert row.text == TINY_DOCS[row.doc_id][row.start : row.end]
    assert set(frame["found_by"]) == {"knn"} and frame["knn_rank"].notna().all()
    assert (frame.groupby("question_id")["score"].apply(lambda s: s.is_monotonic_decreasing)).all()
    manifest = upstream.chunk_index.iloc[0]
    assert set(frame["chunk_config"]) == {CHUNK_CONFIG} and set(frame["profile"]) == {"top2"}
    assert set(frame["collection"]) == {manifest["collection"]}
    assert set(frame["embedder_model_id"]) == {manifest["embedder_model_id"]}
    assert set(frame["chunk_config_hash"]) == {manifest["chunk_config_hash"]}
    assert set(frame["corpus_sha256"]) == set(upstream.eval_questions["corpus_sha256"])
    assert set(frame["dataset_sha256"]) == set(upstream.eval_questions["dataset_sha256"])
    assert metadata["n_questions"] == len(questions) and metadata["n_rows"] == 2 * len(questions)
    assert metadata["found_by_knn"] == 2 * len(questions) and metadata["questions_without_hits"] == 0


def test_the_keyword_profile_finds_the_pump_speed_in_the_pump_chunk(upstream: Upstream, tiny_project: Path):
    profiles = tiny_project / "data" / "retrieval_profiles.yaml"
    profiles.write_text(TINY_PROFILES + KEYWORD_PROFILE, encoding="utf-8")

    frame, metadata = retrieve(upstream, "words")

    first = frame.set_index("question_id").loc["tiny-1"]  # "How fast does the main pump run?"
    assert first["doc_id"] == "alpha/pumps.md" and "1,450 rpm" in first["text"]
    assert set(frame["rank"]) == {1} and set(frame["found_by"]) == {"bm25"}
    assert set(frame["retrievers"]) == {"bm25"} and metadata["found_by_bm25"] == len(frame)
