"""The answers asset run with frames, offline (the extractive answerer over the hashing embedder): one
row per question, the closest retrieved sentence cited by its chunk, an abstention where nothing was
retrieved, and the counts the UI shows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rag_eval_pipeline.defs.answers.assets import answers
from rag_eval_pipeline_tests.conftest import TINY_ANSWERS
from rag_eval_pipeline_tests.defs.conftest import (
    CHUNK_CONFIG,
    chunk_holding,
    hashing_resources,
    scripted_results,
)
from rag_eval_pipeline_tests.defs.frames import run_with_frames
from rag_eval_pipeline_tests.fakes import HashingEmbedder


def test_the_closest_retrieved_sentence_answers_and_nothing_retrieved_abstains(
    tiny_frames: dict[str, pd.DataFrame], tiny_project: Path, tmp_path: Path
):
    cut = tiny_frames["chunks"]
    pump = chunk_holding(cut, "1,450 rpm")
    staff = chunk_holding(cut, "Zoë Mbeki")
    # tiny-2 (the pressure alarm) found nothing
    results = scripted_results(cut, {"tiny-1": [pump], "tiny-3": [staff, pump], "tiny-4": [staff]})

    frame, metadata = run_with_frames(
        answers,
        {"eval_questions": tiny_frames["eval_questions"], "retrieval_results": results},
        hashing_resources(tiny_project, tmp_path),
        {"chunk_config": CHUNK_CONFIG, "profile": "top2"},
    )

    rows = frame.set_index("question_id")
    assert sorted(rows.index) == ["tiny-1", "tiny-2", "tiny-3", "tiny-4"]
    assert (rows["status"] == "ok").all()
    assert "1,450 rpm" in rows.loc["tiny-1", "answer"] and list(rows.loc["tiny-1", "cited_chunk_ids"]) == [
        pump
    ]
    texts = cut.set_index("chunk_id")["text"]
    for qid, row in rows.iterrows():  # every cited text is its chunk's, and every citation was retrieved
        assert list(row["cited_texts"]) == [texts[c] for c in row["cited_chunk_ids"]], qid
        assert set(row["cited_chunk_ids"]) <= set(results.loc[results["question_id"] == qid, "chunk_id"])
    assert rows.loc["tiny-2", "abstained"] and list(rows.loc["tiny-2", "cited_chunk_ids"]) == []
    assert rows.loc["tiny-3", "query"] == "Who leads the night shift and when does it start?"
    assert rows["reference_answer"].to_dict() == {q: a for q, (a, _) in TINY_ANSWERS.items()}
    assert set(frame["retrieval_run_id"]) == {"retrieval-run"} and set(frame["profile"]) == {"top2"}
    assert set(frame["corpus_sha256"]) == set(tiny_frames["eval_questions"]["corpus_sha256"])
    assert metadata["answerer"] == f"extractive:{HashingEmbedder().model_id}"
    assert metadata["n_questions"] == 4 and metadata["n_failed"] == 0
    assert metadata["n_abstained"] == int(rows["abstained"].sum()) >= 1
    assert metadata["n_answered"] == 4 - metadata["n_abstained"]
