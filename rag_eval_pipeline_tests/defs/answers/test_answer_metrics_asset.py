"""The answer_metrics asset run with frames, offline: handwritten answers scored against the golden
references (keyword correctness checked by hand), a row per question, and one summary row in the
history under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.answers.agreement import no_labels_report
from rag_eval_pipeline.core.answers.tables import answers_to_frame, calibration_to_frame
from rag_eval_pipeline.core.answers.types import Answer
from rag_eval_pipeline.core.store.warehouse import ANSWER_SUMMARY, Warehouse
from rag_eval_pipeline.core.tables import retrieved_from_frame
from rag_eval_pipeline.core.types import ChunkId, QuestionId
from rag_eval_pipeline.defs.answers.assets import answer_metrics
from rag_eval_pipeline_tests.defs.conftest import (
    CHUNK_CONFIG,
    chunk_holding,
    hashing_resources,
    scripted_results,
)
from rag_eval_pipeline_tests.defs.frames import run_with_frames
from rag_eval_pipeline_tests.fakes import HashingEmbedder

# (answer, cited chunk's text or None): keyword correctness needs every expected keyword (conftest's
# TINY_ANSWERS): tiny-1 has "1,450 rpm", tiny-2 abstains, tiny-3 lacks "22:00", tiny-4 has both
ANSWERS = {
    "tiny-1": ("It runs at 1,450 rpm.", "1,450 rpm"),
    "tiny-2": ("I don't know.", None),
    "tiny-3": ("Zoë Mbeki leads the night shift.", "Zoë Mbeki"),
    "tiny-4": ("Valve V-12 feeds the loop; Amélie Durand leads maintenance.", "Amélie Durand"),
}
KEYWORD = {"tiny-1": 1.0, "tiny-2": 0.0, "tiny-3": 0.0, "tiny-4": 1.0}


def test_each_answer_is_scored_and_the_run_summarized(
    tiny_frames: dict[str, pd.DataFrame], tiny_project: Path, tmp_path: Path
):
    cut = tiny_frames["chunks"]
    picks = {q: [chunk_holding(cut, text)] for q, (_, text) in ANSWERS.items() if text}
    results = scripted_results(cut, picks)
    written = [
        Answer(
            QuestionId(q),
            answer,
            tuple(ChunkId(c) for c in picks.get(q, [])),
            (),
            "HIGH" if text else None,
            abstained=text is None,
            answerer="handwritten",
        )
        for q, (answer, text) in ANSWERS.items()
    ]
    answered = answers_to_frame(written, retrieved_from_frame(results)).assign(run_id="answers-run")
    answered["query"] = (
        tiny_frames["eval_questions"].set_index("question_id").loc[answered["question_id"], "query"].tolist()
    )
    calibration = calibration_to_frame(no_labels_report(0.7, "no labels in this test"), "none", 0, 0)

    frame, metadata = run_with_frames(
        answer_metrics,
        {
            "eval_questions": tiny_frames["eval_questions"],
            "retrieval_results": results,
            "answers": answered,
            "answer_calibration": calibration,
        },
        hashing_resources(tiny_project, tmp_path),
        {"chunk_config": CHUNK_CONFIG, "profile": "top2"},
    )

    rows = frame.set_index("question_id")
    assert rows["keyword"].astype(float).to_dict() == KEYWORD
    assert "missing: '22:00'" in rows.loc["tiny-3", "keyword_detail"]
    assert set(frame["answers_run_id"]) == {"answers-run"} and set(frame["answerer"]) == {"handwritten"}
    assert set(frame["threshold"]) == {0.7} and set(frame["judge_model"]) == {""}  # no judge offline
    assert set(frame["embedder_model_id"]) == {HashingEmbedder().model_id}
    assert metadata["n_questions"] == 4 and metadata["keyword"] == 0.5
    history = Warehouse(tmp_path / "warehouse").read_history(ANSWER_SUMMARY, ["n_questions", "keyword_mean"])
    assert history.frame["n_questions"].tolist() == [4]
    assert history.frame["keyword_mean"].tolist() == pytest.approx([0.5])
