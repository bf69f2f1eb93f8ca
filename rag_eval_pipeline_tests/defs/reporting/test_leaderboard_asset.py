"""The leaderboard asset run with the metric frames of two partitions (each made by the retrieval_metrics
asset run with frames): the better partition ranks first by the objective of data/monitoring.yaml, the
board carries its mean and tiers, the metadata its recommendation, and the HTML report is written where
the metadata says, with the question set's health as its own section; a bad objective fails the step
naming the file and key."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.question_health.report import health_warnings, summary_row
from rag_eval_pipeline.defs.reporting.assets import leaderboard
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.core.leaderboard.test_render_waterfall import question
from rag_eval_pipeline_tests.core.question_health.test_report import handmade_health
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
    diagnostics = pd.DataFrame([question(CHUNK_CONFIG, "top4", 100, {"top_k": 40}, None)])
    health_row = summary_row(handmade_health(), health_warnings(handmade_health()))
    health = pd.DataFrame([health_row])  # the question_set_health asset's table

    def run() -> tuple[pd.DataFrame, dict[str, object]]:
        return run_with_frames(
            leaderboard,
            {
                "retrieval_metrics": {f"{CHUNK_CONFIG}|top2": missed, f"{CHUNK_CONFIG}|top4": found},
                "answer_metrics": {},
                "answer_judgements": pd.DataFrame(),
                "retrieval_diagnostics": {f"{CHUNK_CONFIG}|top4": diagnostics},
                "question_set_health": health,
            },
            {k: resources[k] for k in ("project", "warehouse")},
        )

    board, metadata = run()
    assert list(zip(board["profile"], board["rank"], strict=True)) == [("top4", 1), ("top2", 2)]
    assert set(board["ranked_by"]) == {"span_recall_1000t"}  # the default objective
    assert board["span_recall_1000t_mean"].tolist() == pytest.approx(
        [found["span_recall_1000t"].mean(), missed["span_recall_1000t"].mean()]
    )
    assert board["span_iou_mean"].tolist() == pytest.approx(
        [found["span_iou"].mean(), missed["span_iou"].mean()]
    )
    assert board["tier"].tolist() == [1, 1]  # four questions cannot separate two setups (p >= 1/8)
    assert metadata["best"] == f"{CHUNK_CONFIG} x top4" and metadata["n_ranked"] == 2
    assert metadata["ranked_by"] == "span_recall_1000t"
    assert str(metadata["recommendation"]).startswith(
        f"**Recommended: {CHUNK_CONFIG} x top4, span_recall_1000t"
    )
    assert "these 2 setups are statistically tied" in str(metadata["recommendation"])
    report = Path(str(metadata["report_path"]))
    assert report.is_file() and report.is_relative_to((tmp_path / "warehouse").resolve())
    html = report.read_text(encoding="utf-8")
    assert "top4" in html and '<section id="recommendation">' in html
    # why it misses: the partition with diagnostics has its waterfall and its row in the metadata
    assert html.count('class="waterfall"') == 1 and f'data-partition="{CHUNK_CONFIG}|top4"' in html
    assert f"| {CHUNK_CONFIG} | top4 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.400 | 0.600 |" in str(
        metadata["diagnostics"]
    )
    # the question set's health: its section, with the asset's warnings
    assert '<section id="question-health">' in html
    assert html.count('<li data-measure="') == health_row["n_warnings"] > 0

    # another objective in data/monitoring.yaml: the board is ranked by it
    monitoring = tiny_project / "data/monitoring.yaml"
    monitoring.write_text("leaderboard: {rank_by: mrr, context_budget_tokens: null}\n", encoding="utf-8")
    board, metadata = run()
    assert set(board["ranked_by"]) == {"mrr"} and metadata["ranked_by"] == "mrr"

    monitoring.write_text("leaderboard: {rank_by: relevance}\n", encoding="utf-8")
    with pytest.raises(dg.Failure, match=r"monitoring.yaml: leaderboard.rank_by: unknown metric 'relevance'"):
        run()
