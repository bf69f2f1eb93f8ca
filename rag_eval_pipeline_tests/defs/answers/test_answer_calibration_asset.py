"""The answer_calibration asset run with frames on the tiny project's twelve human labels (offline: no
judge): keyword correctness agrees with 11 of them, worked out by hand below."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.defs.answers.assets import answer_calibration
from rag_eval_pipeline_tests.conftest import TINY_LABELS
from rag_eval_pipeline_tests.defs.conftest import hashing_resources
from rag_eval_pipeline_tests.defs.frames import run_with_frames

# Keyword correctness (every expected keyword in the answer) against the labels: only "turns at 1,450
# revolutions per minute" (correct, but no "rpm") disagrees. 6 correct labels, 5 keyword passes:
# accuracy 11/12; chance agreement (6/12)(5/12) + (6/12)(7/12) = 1/2, so kappa (11/12 - 1/2) / (1/2) = 5/6.
KEYWORD_ACCURACY = 11 / 12
KEYWORD_KAPPA = 5 / 6


def test_the_labels_measure_each_method_and_fit_the_threshold(
    tiny_frames: dict[str, pd.DataFrame], tiny_project: Path, tmp_path: Path
):
    frame, metadata = run_with_frames(
        answer_calibration,
        {"eval_questions": tiny_frames["eval_questions"]},
        hashing_resources(tiny_project, tmp_path),
    )

    methods = frame.set_index("method")
    assert methods.loc["keyword", "n"] == len(TINY_LABELS) == metadata["n_labels"] == 12
    assert float(methods.loc["keyword", "accuracy"]) == pytest.approx(KEYWORD_ACCURACY)
    assert float(methods.loc["keyword", "cohen_kappa"]) == pytest.approx(KEYWORD_KAPPA)
    assert metadata["keyword_accuracy"] == pytest.approx(KEYWORD_ACCURACY, abs=5e-5)
    assert metadata["keyword_kappa"] == pytest.approx(KEYWORD_KAPPA, abs=5e-5)
    assert metadata["n_labels_unmatched"] == 0 and "judge" not in set(frame["method"])  # no LLM offline
    # twelve labels >= min_labels (10): the threshold is fitted on the 0.50..0.90 grid, not the fixed one
    assert metadata["threshold_how"] == "fitted" and set(frame["threshold"]) == {metadata["threshold"]}
    assert (
        round(metadata["threshold"] * 20) == metadata["threshold"] * 20
        and 0.5 <= metadata["threshold"] <= 0.9
    )
    assert set(frame["dataset_sha256"]) == set(tiny_frames["eval_questions"]["dataset_sha256"])


def test_without_a_labels_file_the_fixed_threshold_is_used_and_said_why(
    tiny_frames: dict[str, pd.DataFrame], tiny_project: Path, tmp_path: Path
):
    labels = tiny_project / "data" / "datasets" / "golden_answer_labels.jsonl"
    labels.unlink()
    frame, metadata = run_with_frames(
        answer_calibration,
        {"eval_questions": tiny_frames["eval_questions"]},
        hashing_resources(tiny_project, tmp_path),
    )
    assert metadata["n_labels"] == 0 and metadata["threshold_how"] != "fitted"
    assert f"no labels file at {labels}" in str(metadata["threshold_reason"])
    assert frame["accuracy"].isna().all()
