"""The leaderboard materialization writes the HTML report (current and per run) and links it from its
metadata; the page, rendered by Chromium, shows this board and the trends from the Parquet history,
including a summary file written before evaluation_id and evaluation_mode existed."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline.runner.in_process import run_main_job
from rag_eval_pipeline_tests.chromium import rendered_dom
from rag_eval_pipeline_tests.conftest import latest_metadata, tiny_resources

pytestmark = pytest.mark.slow


def test_leaderboard_writes_the_report_and_links_it(tiny_project: Path, tmp_path: Path):
    warehouse = Warehouse(tmp_path / "warehouse")
    old_run = {"chunk_config": "fixed-60-0", "profile": "top2"}
    warehouse.write_history(  # an evaluation three days ago, in the format before evaluation_id existed
        pd.DataFrame(
            [
                {
                    "run_id": "old-run",
                    "created_at": datetime.now(UTC) - timedelta(days=3),
                    **old_run,
                    "n_questions": 4,
                    "span_iou_mean": 0.01,
                    "span_recall_mean": 0.02,
                    "mrr_mean": 0.03,
                }
            ]
        ),
        RETRIEVAL_SUMMARY,
        old_run,
        "old-run",
    )
    with dg.instance_for_test() as instance:
        board, failures = run_main_job(
            instance, resources=tiny_resources(tiny_project, tmp_path), show_progress=False
        )
        assert failures == [] and board is not None
        metadata = latest_metadata(instance, "leaderboard")

    run_id = str(board["run_id"].iloc[0])
    report = warehouse.report_paths(run_id)
    current, snapshot = report.current, report.snapshot
    assert metadata["report"] == snapshot.resolve().as_uri()
    assert metadata["report_path"] == str(snapshot.resolve())
    assert metadata["report_latest_path"] == str(current.resolve())
    assert current.read_bytes() == snapshot.read_bytes()

    dom = rendered_dom(Path(metadata["report_path"]), tmp_path)
    pairs = list(zip(board["chunk_config"], board["profile"], strict=True))
    rows = dom.find("table", id="leaderboard").find("tbody").find_all("tr")
    assert [(r.attrs["data-chunk-config"], r.attrs["data-profile"]) for r in rows] == pairs
    assert [r.find("td", data_column="chunk_config").text() for r in rows] == list(board["chunk_config"])
    points = dom.find("svg", id="scatter").find_all("circle", class_="point")
    assert sorted((p.attrs["data-chunk-config"], p.attrs["data-profile"]) for p in points) == sorted(pairs)

    iou = dom.find("svg", id="trends").find("g", class_="panel", data_metric="span_iou")
    series = {
        (s.attrs["data-chunk-config"], s.attrs["data-profile"]): s for s in iou.find_all("g", class_="series")
    }
    assert sorted(series) == sorted(pairs)
    means = dict(zip(pairs, board["span_iou_mean"], strict=True))
    for pair, line in series.items():
        circles = line.find_all("circle", class_="point")
        # the old evaluation comes first, then this run's, whose mean is the leaderboard's
        assert [c.attrs["data-run-id"] for c in circles][:-1] == (
            ["old-run"] if pair == ("fixed-60-0", "top2") else []
        )
        assert float(circles[-1].attrs["data-value"]) == pytest.approx(means[pair], abs=1e-6)
        assert circles[-1].attrs["data-mode"] == "full"
