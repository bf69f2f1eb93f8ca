"""The leaderboard asset run with the metric frames of two partitions (each made by the retrieval_metrics
asset run with frames): the better partition ranks first, the board carries its mean, and the HTML
report is written where the metadata says."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.defs.reporting.assets import leaderboard
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.defs.evaluation.test_retrieval_metrics_asset import (
    CHUNK_CONFIG,
    metrics_with_frames,
    scripted_hits,
    tiny_inputs,
)
from rag_eval_pipeline_tests.defs.frames import run_with_frames


def test_leaderboard_ranks_the_partitions_it_is_given(tiny_project: Path, tmp_path: Path):
    cut, dataset = tiny_inputs(tiny_project)
    found, _ = metrics_with_frames(tiny_project, tmp_path, "top4", scripted_hits(cut, dataset, find=True))
    missed, _ = metrics_with_frames(tiny_project, tmp_path, "top2", scripted_hits(cut, dataset, find=False))
    resources = tiny_resources(tiny_project, tmp_path)

    board, metadata = run_with_frames(
        leaderboard,
        {
            "retrieval_metrics": {f"{CHUNK_CONFIG}|top2": missed, f"{CHUNK_CONFIG}|top4": found},
            "answer_metrics": {},
            "answer_judgements": pd.DataFrame(),
        },
        {k: resources[k] for k in ("project", "warehouse")},
    )

    assert list(zip(board["profile"], board["rank"], strict=True)) == [("top4", 1), ("top2", 2)]
    assert board["span_iou_mean"].tolist() == pytest.approx(
        [found["span_iou"].mean(), missed["span_iou"].mean()]
    )
    assert metadata["best"] == f"{CHUNK_CONFIG} x top4" and metadata["n_ranked"] == 2
    report = Path(str(metadata["report_path"]))
    assert report.is_file() and report.is_relative_to((tmp_path / "warehouse").resolve())
    assert "top4" in report.read_text(encoding="utf-8")
