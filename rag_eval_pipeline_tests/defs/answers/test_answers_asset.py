"""The answers asset run with frames, offline (the extractive answerer over the hashing embedder): one
row per question, the closest retrieved sentence cited by its chunk, an abstention where nothing was
retrieved, and the counts the UI shows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.answers.agreement import no_labels_report
from rag_eval_pipeline.core.answers.tables import calibration_to_frame
from rag_eval_pipeline.defs.answers.assets import answer_metrics, answers
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


def without_references(questions: pd.DataFrame) -> pd.DataFrame:
    """The golden questions as generated ones come: no reference answer, no keywords."""
    return questions.assign(
        reference_answer=pd.Series([None] * len(questions), index=questions.index, dtype=object),
        expected_keywords=[[] for _ in range(len(questions))],
    )


def embedded_texts(work: Path) -> int:
    """The vectors in the step's embedding cache (its identity row aside)."""
    cache = work / "cache" / "embeddings.sqlite"
    if not cache.exists():
        return 0
    with sqlite3.connect(cache) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables <= {"embeddings", "cache_identity"}, tables  # vectors are only in `embeddings`
        return (
            int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]) if "embeddings" in tables else 0
        )


def test_offline_answers_nothing_could_score_are_not_built_and_every_answer_metric_says_why(
    tiny_frames: dict[str, pd.DataFrame], tiny_project: Path, tmp_path: Path
):
    cut = tiny_frames["chunks"]
    results = scripted_results(cut, {q: [chunk_holding(cut, "1,450 rpm")] for q in ("tiny-1", "tiny-2")})
    questions = without_references(tiny_frames["eval_questions"])
    resources = hashing_resources(tiny_project, tmp_path)
    key = {"chunk_config": CHUNK_CONFIG, "profile": "top2"}

    frame, metadata = run_with_frames(
        answers, {"eval_questions": questions, "retrieval_results": results}, resources, key
    )

    assert (frame["status"] == "skipped").all() and (frame["answer"] == "").all()
    assert metadata["answerer"] == "none" and metadata["n_skipped"] == 4 and metadata["n_failed"] == 0
    reason = metadata["skipped_reason"]
    assert "no question has a reference answer or keywords" in reason and "answerer: extractive" in reason
    assert set(frame["error"]) == {reason}
    assert embedded_texts(tmp_path) == 0  # no sentence was embedded for answers nothing scores

    calibration = calibration_to_frame(no_labels_report(0.7, "no labels in this test"), "none", 0, 0)
    metrics, _ = run_with_frames(
        answer_metrics,
        {
            "eval_questions": questions,
            "retrieval_results": results,
            "answers": frame.assign(run_id="answers-run"),
            "answer_calibration": calibration,
        },
        resources,
        key,
    )
    assert (metrics["semantic_similarity_status"] == "skipped").all()
    assert set(metrics["semantic_similarity_detail"]) == {f"no answer: {reason}"}
    assert (metrics["context_precision_status"] == "skipped").all()  # it reads the answer's citations
    assert (metrics["context_recall_heuristic_status"] == "ok").all()  # question and hits: still measured


@pytest.mark.parametrize("answerer", ["extractive", "off"])
def test_the_answerer_setting_builds_extractive_answers_anyway_or_never(
    tiny_frames: dict[str, pd.DataFrame], tiny_project: Path, tmp_path: Path, answerer: str
):
    (tiny_project / "data" / "answer_evaluation.yaml").write_text(f"answerer: {answerer}\n", encoding="utf-8")
    cut = tiny_frames["chunks"]
    results = scripted_results(cut, {"tiny-1": [chunk_holding(cut, "1,450 rpm")]})
    questions = without_references(tiny_frames["eval_questions"])
    if answerer == "off":  # off wins even where references exist
        questions = tiny_frames["eval_questions"]

    frame, metadata = run_with_frames(
        answers,
        {"eval_questions": questions, "retrieval_results": results},
        hashing_resources(tiny_project, tmp_path),
        {"chunk_config": CHUNK_CONFIG, "profile": "top2"},
    )

    if answerer == "extractive":
        assert (frame["status"] == "ok").all() and metadata["answerer"].startswith("extractive:")
        assert "1,450 rpm" in frame.set_index("question_id").loc["tiny-1", "answer"]
    else:
        assert (frame["status"] == "skipped").all()
        assert metadata["skipped_reason"].startswith("answerer: off in ")
