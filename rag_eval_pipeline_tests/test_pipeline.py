"""The whole asset graph on a real Dagster instance, real MiniLM, real Qdrant, real Parquet files."""

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.leaderboard.render_text import format_leaderboard
from rag_eval_pipeline.core.significant_digits import significant
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.io_managers import read_current_leaderboard
from rag_eval_pipeline_tests.conftest import TinyRunFactory, latest_metadata, tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests

pytestmark = pytest.mark.slow


def test_main_job_evaluates_every_partition_and_keeps_history(tiny_run: TinyRunFactory):
    run = tiny_run()  # evaluated over every partition, without failures
    resources = run.resources()
    warehouse = Warehouse(run.work / "warehouse")
    with run.instance() as instance:
        board = read_current_leaderboard(resources)  # what the evaluation left
        assert board is not None
        assert sorted(zip(board["chunk_config"], board["profile"], strict=True)) == [
            ("fixed-60-0", "top2"),
            ("fixed-60-0", "top4"),
            ("recursive-120-20", "top2"),
            ("recursive-120-20", "top4"),
        ]
        assert list(board["rank"]) == [1, 2, 3, 4]
        assert set(board["ranked_by"]) == {"span_recall_1000t"}  # the default objective
        assert board["span_recall_1000t_mean"].is_monotonic_decreasing
        assert board["tier"].notna().all()
        assert (board["span_recall_ci_low"] <= board["span_recall_mean"]).all()
        assert "fixed-60-0" in format_leaderboard(board)

        results = pd.read_parquet(
            warehouse.current_path("retrieval_results", {"chunk_config": "fixed-60-0", "profile": "top2"})
        )
        for column in (
            "run_id",
            "chunk_config",
            "profile",
            "question_id",
            "rank",
            "chunk_id",
            "doc_id",
            "start",
            "end",
            "score",
        ):
            assert column in results.columns
        assert results.groupby("question_id")["rank"].max().eq(2).all()
        metrics = pd.read_parquet(
            warehouse.current_path("retrieval_metrics", {"chunk_config": "fixed-60-0", "profile": "top4"})
        )
        assert {"run_id", "chunk_config", "profile", "question_id", "span_recall", "span_iou", "mrr"} <= set(
            metrics.columns
        )
        assert len(metrics) == 4

        # each materialization is its own hive-style history file; summaries too
        assert len(warehouse.history_files("retrieval_metrics")) == 4
        assert len(warehouse.history_files(RETRIEVAL_SUMMARY)) == 4
        assert len(warehouse.history_files("leaderboard")) == 1

        # metric means are materialization metadata (four significant digits), so the UI plots them
        key = dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top4"})
        assert latest_metadata(instance, "retrieval_metrics", key)["span_recall"] == significant(
            metrics["span_recall"].mean()
        )

        # a stage of under 2 s leaves no progress line (each is an event the run stores; core/progress.py
        # says when a long one writes), the step's own summary says what it did
        messages = [e.user_message for run in instance.get_runs() for e in instance.all_logs(run.run_id)]
        assert not any(m.startswith("retrieval (top2): ") and "(100%)" in m for m in messages)
        assert any(m.startswith("fixed-60-0 x top2 v1 (knn): top 2 for 4 questions") for m in messages)

        # a second run (forced: by default an up-to-date partition is skipped) re-embeds nothing and
        # adds history instead of overwriting it
        board_again, failures = evaluate_board(instance, resources=resources, show_progress=False, force=True)
        assert failures == []
        assert latest_metadata(instance, "chunk_index", "fixed-60-0")["texts_embedded"] == 0
        assert len(warehouse.history_files("retrieval_metrics")) == 8
        cols = ["chunk_config", "profile", "span_iou_mean", "mrr_mean"]
        pd.testing.assert_frame_equal(board[cols], board_again[cols])  # deterministic


def test_bad_dataset_fails_clearly_and_keeps_what_was_computed(tiny_run: TinyRunFactory):
    run = tiny_run(["fixed-60-0"], ["top2"])  # evaluated without failures
    resources = run.resources()
    with run.instance() as instance:
        dataset = run.project / "data/datasets/golden_token_level.jsonl"
        dataset.write_text(
            dataset.read_text(encoding="utf-8").replace("1,450 rpm", "1,500 rpm"), encoding="utf-8"
        )
        board_after, failures = evaluate_board(instance, resources=resources, show_progress=False)
    assert len(failures) == 1
    assert "golden_token_level.jsonl, line 1" in failures[0] and "does not match" in failures[0]
    assert board_after is not None and len(board_after) == 1  # the earlier leaderboard is still there


def test_a_partition_without_a_config_fails_with_the_known_names(tiny_project: Path, tmp_path: Path):
    defs = build_definitions(tiny_resources(tiny_project, tmp_path))
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["ghost"])
        defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance)
        result = defs.resolve_job_def("chunking_job").execute_in_process(
            instance=instance, partition_key="ghost", raise_on_error=False
        )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert "no chunk config named 'ghost'" in message and "fixed-60-0" in message
