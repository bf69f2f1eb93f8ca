"""What the Dagster UI shows of a leaderboard materialization: the board as table metadata (inline, in
rank order, each retrieval metric as mean [CI] at four significant digits), every number of the
metadata rounded the same way, the markdown kept to copy, and a description a renderer cannot eat."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pandas as pd

from rag_eval_pipeline.core.leaderboard.render_table import mean_ci_text
from rag_eval_pipeline.core.significant_digits import significant
from rag_eval_pipeline.defs.reporting.assets import leaderboard
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.defs.evaluation.test_retrieval_metrics_asset import (
    CHUNK_CONFIG,
    metrics_with_frames,
    scripted_hits,
    tiny_inputs,
)
from rag_eval_pipeline_tests.defs.frames import run_with_frames


def test_the_leaderboard_is_a_table_in_the_ui_with_rounded_numbers(tiny_project: Path, tmp_path: Path):
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
            "retrieval_diagnostics": {},
            "question_set_health": pd.DataFrame(),
        },
        {k: resources[k] for k in ("project", "warehouse")},
    )

    table = metadata["leaderboard"]
    assert isinstance(table, dg.TableMetadataValue)
    names = [c.name for c in table.schema.columns]
    records = [r.data for r in table.records]
    assert all(list(r) == names for r in records)  # a cell per column, keyed as the header says
    assert {"rank", "chunk config", "profile", "span IoU", "span recall", "MRR"} <= set(names)
    assert [(r["rank"], r["profile"]) for r in records] == [("1", "top4"), ("2", "top2")]
    assert [r["span IoU"] for r in records] == [mean_ci_text(row, "span_iou") for _, row in board.iterrows()]
    top = records[0]["span IoU"]
    assert isinstance(top, str) and float(top.split(" [")[0]) == significant(float(found["span_iou"].mean()))
    for record in records:  # what the UI parses, row by row: strict JSON
        json.dumps(record, allow_nan=False)
    for key, value in metadata.items():  # every number at four significant digits
        assert not isinstance(value, float) or value == significant(value), key
    ranked_by = str(metadata["ranked_by"])
    assert metadata["best_score"] == significant(float(board[f"{ranked_by}_mean"].iloc[0]))
    assert f"| 1 | {CHUNK_CONFIG} | top4 |" in str(metadata["leaderboard_markdown"])  # the same, to copy
    # costs beside the scores: the context's tokens and dollars at the default generator's prices (no
    # latency or index size: these metrics were scored from scripted hits), the front marked, and the
    # recommendation's line
    assert {"context tokens", "$ per 1k questions", "Pareto front"} <= set(names)
    assert "p95 search (ms)" not in names and "index size" not in names
    assert [r["Pareto front"] for r in records] == [
        "yes" if front else "no" for front in board["pareto_front"].astype(bool)
    ]
    assert set(str(metadata["pareto_front"]).split(", ")) == {
        f"{c} x {p}"
        for c, p, on in zip(board["chunk_config"], board["profile"], board["pareto_front"], strict=True)
        if on
    }
    assert "- **cost**: " in str(metadata["recommendation"])
    # power (core/leaderboard/power.py): 4 questions, and 4 sign flips cannot reach alpha 0.05 (2 / 2^4 >
    # 0.05): the two are tied, and the metadata says how many questions would separate them
    assert "- **power**: 4 questions are too few to detect any difference at 80 % power" in str(
        metadata["recommendation"]
    )
    assert metadata["power_questions_to_separate_tier_1"] == int(board["power_questions_needed"].max()) > 4
    assert metadata["diagnostics"] == "No retrieval diagnostics yet."  # no partition diagnosed
    description = leaderboard.specs_by_key[dg.AssetKey("leaderboard")].description or ""
    assert "`reports/history/{run_id}.html`" in description
