"""The leaderboard materialization writes the HTML report (current and per run) and links it from its
metadata; the page, rendered by Chromium, shows this board and the trends from the Parquet history,
including a summary file written before evaluation_id and evaluation_mode existed."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline_tests.chromium import rendered_dom
from rag_eval_pipeline_tests.conftest import latest_metadata, tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests

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
    with instance_for_tests() as instance:
        board, failures = evaluate_board(
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
    points = dom.find("svg", id="scatter").find_all(class_="point")
    assert sorted((p.attrs["data-chunk-config"], p.attrs["data-profile"]) for p in points) == sorted(pairs)

    # a trend for the partition evaluated twice (three days ago and now), ending at the board's mean; the
    # partitions evaluated once are named under the chart, not drawn as lone dots
    iou = dom.find("svg", id="trends").find("g", class_="panel", data_metric="span_iou")
    series = {
        (s.attrs["data-chunk-config"], s.attrs["data-profile"]): s for s in iou.find_all("g", class_="series")
    }
    assert list(series) == [("fixed-60-0", "top2")]
    points = series[("fixed-60-0", "top2")].find_all(class_="point")
    evaluated_by = dict(zip(pairs, board["metrics_run_id"], strict=True))  # this evaluation's run
    assert [p.attrs["data-run-id"] for p in points] == ["old-run", evaluated_by[("fixed-60-0", "top2")]]
    assert [p.attrs["data-mode"] for p in points] == ["full", "full"]
    means = dict(zip(pairs, board["span_iou_mean"], strict=True))
    assert float(points[-1].attrs["data-value"]) == pytest.approx(means[("fixed-60-0", "top2")], abs=1e-6)
    assert len(series[("fixed-60-0", "top2")].find("polyline").attrs["points"].split()) == 2
    once = dom.find("p", id="trends-single").text()
    assert all(f"{c} × {p}" in once for c, p in pairs if (c, p) != ("fixed-60-0", "top2"))

    # the UI's table: the board in rank order, as the report shows it
    table = metadata["leaderboard"]
    assert isinstance(table, dg.TableMetadataValue)
    assert [(r.data["chunk config"], r.data["profile"]) for r in table.records] == pairs
