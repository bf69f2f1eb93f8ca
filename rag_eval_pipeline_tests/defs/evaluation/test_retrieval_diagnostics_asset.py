"""retrieval_diagnostics through Dagster on the tiny project: built by every evaluation run (the table
and its history, a summary row per run, metadata the UI plots), shown by the leaderboard, skipped when
up to date, the same data version when re-run, and refused, naming the question, when
retrieval_results no longer matches the indexes."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.diagnostics.stages import RETRIEVAL_STAGES
from rag_eval_pipeline.core.runs.run_tags import DATA_VERSION_TAG
from rag_eval_pipeline.core.store.warehouse import DIAGNOSTICS_SUMMARY, Warehouse
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline_tests.conftest import latest_metadata, tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests

pytestmark = pytest.mark.slow

HYBRID = """\
  - name: hybrid
    top_k: 1
    vector_weight: 0.6
    keyword_weight: 0.4
    similarity_threshold: 0.3
"""


def key(profile: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": profile})


def materializations(instance: dg.DagsterInstance, profile: str) -> list[dg.EventLogRecord]:
    return list(
        instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey("retrieval_diagnostics"), asset_partitions=[key(profile)]
            ),
            limit=10,
        ).records
    )


def test_every_evaluation_diagnoses_its_partition_and_the_leaderboard_shows_it(
    tiny_project: Path, tmp_path: Path
):
    profiles = tiny_project / "data/retrieval_profiles.yaml"
    profiles.write_text(profiles.read_text(encoding="utf-8") + HYBRID, encoding="utf-8")
    resources = tiny_resources(tiny_project, tmp_path)
    warehouse = Warehouse(tmp_path / "warehouse")
    with instance_for_tests() as instance:
        board, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top2", "hybrid"],
            resources=resources,
            show_progress=False,
        )
        assert failures == [] and board is not None
        partition = {"chunk_config": "fixed-60-0", "profile": "hybrid"}
        frame = warehouse.read_current("retrieval_diagnostics", partition)
        assert frame is not None and sorted(frame["question_id"]) == ["tiny-1", "tiny-2", "tiny-3", "tiny-4"]
        metrics = warehouse.read_current("retrieval_metrics", partition)
        assert metrics is not None
        # the evaluation's own recall, and every question's characters add up
        recall = metrics.set_index("question_id")["span_recall"]
        assert frame.set_index("question_id")["span_recall"].to_dict() == pytest.approx(recall.to_dict())
        lost = frame[[f"{s}_chars" for s in RETRIEVAL_STAGES]].sum(axis=1)
        assert (lost + frame["retrieved_chars"] == frame["reference_chars"]).all()
        # the tiny questions have reference answers and keywords: the answers' stages are filled
        answered = frame[
            ["not_cited_chars", "answer_wrong_chars", "answer_correct_chars", "answer_unjudged_chars"]
        ]
        assert (answered.sum(axis=1) == frame["retrieved_chars"]).all()
        assert set(frame["answer_judged_by"]) == {"keyword"}
        assert (frame["run_id"] != "").all() and set(frame["retrieval_run_id"]) == set(
            metrics["retrieval_run_id"]
        )
        # history: the table's file and the summary row of the run
        (run_id,) = set(frame["run_id"])
        assert warehouse.history_path("retrieval_diagnostics", partition, run_id).is_file()
        summary = pd.read_parquet(warehouse.history_path(DIAGNOSTICS_SUMMARY, partition, run_id))
        assert summary["retrieved_share"].iloc[0] == pytest.approx(recall.mean())
        assert summary["reference_texts"].iloc[0] == 5 and summary["seconds_replay"].iloc[0] > 0
        metadata = latest_metadata(instance, "retrieval_diagnostics", key("hybrid"))
        assert {f"{s}_share" for s in RETRIEVAL_STAGES} <= set(metadata)
        assert metadata["oracle_ranking_recall"] >= metadata["retrieved_share"]
        # each partition's diagnostics in the leaderboard's metadata and report
        shown = str(latest_metadata(instance, "leaderboard")["diagnostics"])
        assert "| fixed-60-0 | top2 |" in shown and "| fixed-60-0 | hybrid |" in shown
        report = (tmp_path / "warehouse/reports/leaderboard.html").read_text(encoding="utf-8")
        assert report.count('class="waterfall"') == 2

        # nothing changed: the next run does not diagnose again
        evaluate_board(instance, chunk_configs=["fixed-60-0"], resources=resources, show_progress=False)
        assert len(materializations(instance, "hybrid")) == 1
        # forced: the same content, the same data version, so nothing downstream turns stale
        before = materializations(instance, "hybrid")[0].asset_materialization
        evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["hybrid"],
            resources=resources,
            show_progress=False,
            force=True,
        )
        after = materializations(instance, "hybrid")
        assert len(after) == 2 and after[0].asset_materialization is not None and before is not None
        assert after[0].asset_materialization.tags[DATA_VERSION_TAG] == before.tags[DATA_VERSION_TAG]

        # retrieval_results edited behind Dagster's back: the replay disagrees, and says where
        path = warehouse.current_path("retrieval_results", {"chunk_config": "fixed-60-0", "profile": "top2"})
        results = pd.read_parquet(path)
        results.loc[results["question_id"] == "tiny-1", "chunk_id"] = "pa_chunk_000000000000"
        results.to_parquet(path)
        job = build_definitions(resources).resolve_job_def("evaluation_job")
        outcome = job.execute_in_process(
            instance=instance,
            partition_key=key("top2"),
            asset_selection=[dg.AssetKey("retrieval_diagnostics")],
            raise_on_error=False,
        )
        assert not outcome.success
        (failure,) = [e for e in outcome.all_events if e.is_step_failure]
        message = str(failure.step_failure_data.error.message if failure.step_failure_data.error else "")
        assert "fixed-60-0 x top2: question tiny-1: retrieval_results holds" in message
        assert "materialize retrieval_results again" in message
        # the diagnostics computed before are still there
        assert (
            warehouse.read_current("retrieval_diagnostics", {"chunk_config": "fixed-60-0", "profile": "top2"})
            is not None
        )
