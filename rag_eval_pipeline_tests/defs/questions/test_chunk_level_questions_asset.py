"""The chunk_level_questions asset run with frames, offline, on the session's chunks[fixed-60-0]: its
ground truth is that chunk set's ids, the JSONL it writes reads back as the same questions, and the
table says which chunker the ids belong to."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rag_eval_pipeline.core.questions.datasets import read_chunk_level_jsonl
from rag_eval_pipeline.defs.questions.assets import chunk_level_questions
from rag_eval_pipeline_tests.defs.conftest import CHUNK_CONFIG, hashing_resources
from rag_eval_pipeline_tests.defs.frames import run_with_frames


def test_questions_point_at_this_chunk_sets_ids(
    tiny_frames: dict[str, pd.DataFrame], tiny_project: Path, tmp_path: Path
):
    (tiny_project / "data" / "generation.yaml").write_text("chunk_level: {max_chunks: 5}\n", encoding="utf-8")
    cut = tiny_frames["chunks"]

    frame, metadata = run_with_frames(
        chunk_level_questions,
        {"chunks": cut},
        hashing_resources(tiny_project, tmp_path),
        {"chunk_config": CHUNK_CONFIG},
    )

    dataset = read_chunk_level_jsonl(str(metadata["jsonl"]))
    assert Path(str(metadata["jsonl"])).is_relative_to(tmp_path)  # the warehouse of this test
    assert 0 < len(dataset) == metadata["n_questions"] <= 5
    assert dataset.chunker_fingerprint == cut["chunker_fingerprint"].iloc[0]
    assert {c for e in dataset for c in e.relevant_chunk_ids} <= set(cut["chunk_id"])
    assert all(3 <= len(e.metadata["keywords"]) <= 5 for e in dataset)
    accepted = frame[frame["status"] == "accepted"]
    assert sorted(accepted["question_id"]) == sorted(e.question_id for e in dataset)
    assert set(frame["chunk_config"]) == {CHUNK_CONFIG} and set(frame["dataset_sha256"]) == {dataset.sha256}
