"""The retrieval_diagnostics asset run with frames on one partition, its inputs made by their assets
(retrieval_results over the indexes of chunk_index, offline answers, answer_metrics): the share of each
reference the top k kept is worked out here from the retrieved rows; with 60-character chunks every
reference lies within two chunks, so the best ranking of this chunk set (oracle ranking) keeps it all."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.answers.agreement import no_labels_report
from rag_eval_pipeline.core.answers.tables import calibration_to_frame
from rag_eval_pipeline.core.store.warehouse import DIAGNOSTICS_SUMMARY, Warehouse
from rag_eval_pipeline.defs.answers.assets import answer_metrics, answers
from rag_eval_pipeline.defs.evaluation.assets import retrieval_results
from rag_eval_pipeline.defs.evaluation.diagnostics import retrieval_diagnostics
from rag_eval_pipeline_tests.defs.conftest import CHUNK_CONFIG, Upstream
from rag_eval_pipeline_tests.defs.frames import run_with_frames

PARTITION = {"chunk_config": CHUNK_CONFIG, "profile": "top2"}


def kept_share(spans: list[dict[str, object]], rows: pd.DataFrame) -> float:
    """Characters of the (disjoint) reference spans inside some retrieved chunk, over their length."""
    kept = total = 0
    for span in spans:
        start, end = int(str(span["start"])), int(str(span["end"]))
        total += end - start
        inside = rows[rows["doc_id"] == span["doc_id"]]
        kept += sum(1 for i in range(start, end) if ((inside["start"] <= i) & (i < inside["end"])).any())
    return kept / total


def test_each_questions_loss_is_measured_from_what_was_retrieved(upstream: Upstream, tmp_path: Path):
    questions = upstream.eval_questions
    results, _ = run_with_frames(
        retrieval_results,
        {"chunk_index": upstream.chunk_index, "chunks": upstream.chunks, "eval_questions": questions},
        upstream.resources,
        PARTITION,
    )
    answered, _ = run_with_frames(
        answers, {"eval_questions": questions, "retrieval_results": results}, upstream.resources, PARTITION
    )
    calibration = calibration_to_frame(no_labels_report(0.7, "no labels in this test"), "none", 0, 0)
    scored, _ = run_with_frames(
        answer_metrics,
        {
            "eval_questions": questions,
            "retrieval_results": results,
            "answers": answered,
            "answer_calibration": calibration,
        },
        upstream.resources,
        PARTITION,
    )

    frame, metadata = run_with_frames(
        retrieval_diagnostics,
        {
            "corpus": upstream.corpus,
            "chunks": upstream.chunks,
            "chunk_index": upstream.chunk_index,
            "eval_questions": questions,
            "retrieval_results": results,
            "answers": answered,
            "answer_metrics": scored,
        },
        upstream.resources,
        PARTITION,
    )

    rows = frame.set_index("question_id")
    expected = {
        q: kept_share(list(spans), results[results["question_id"] == q])
        for q, spans in zip(questions["question_id"], questions["relevant_spans"], strict=True)
    }
    assert rows["retrieved_share"].to_dict() == pytest.approx(expected)
    assert rows["span_recall"].to_dict() == pytest.approx(expected)
    assert 0 < min(expected.values()) < 1 == max(expected.values())  # some lost, some kept whole
    assert (rows["oracle_ranking_recall"] == 1.0).all()
    lost = rows["retrieved_share"] < 1
    assert (rows.loc[~lost, "lost_at"] == "none").all() and (rows.loc[lost, "lost_at"] != "none").all()
    # the shares of each reference add up: kept, or lost at one stage
    stages = [
        c for c in frame.columns if c.endswith("_share") and not c.startswith(("retrieved", "answer", "not_"))
    ]
    assert (rows["retrieved_share"] + rows[stages].sum(axis=1)).to_numpy() == pytest.approx(1.0)
    mean = sum(expected.values()) / len(expected)
    assert metadata["retrieved_share"] == pytest.approx(mean, abs=5e-5) and metadata["n_questions"] == 4
    assert set(frame["retrieval_run_id"]) == set(results["run_id"])
    history = Warehouse(tmp_path / "warehouse").read_history(DIAGNOSTICS_SUMMARY, ["retrieved_share"])
    assert history.frame["retrieved_share"].tolist() == pytest.approx([mean])
