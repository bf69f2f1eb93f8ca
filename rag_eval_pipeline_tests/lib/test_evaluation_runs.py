"""Quick and full mode through Dagster, and the evaluation id every metrics row carries."""

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.store.warehouse import LEADERBOARD, RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.evaluation_runs import (
    evaluation_id_of,
    evaluation_run_config,
    evaluation_tags,
    superseded_runs,
)
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.runner.runs import run


def current(warehouse: Warehouse, asset: str) -> pd.DataFrame:
    return pd.read_parquet(warehouse.current_path(asset, {"chunk_config": "fixed-60-0", "profile": "top2"}))


@pytest.mark.slow
def test_quick_mode_evaluates_the_same_seeded_sample_in_every_asset(tiny_project: Path, tmp_path: Path):
    (tiny_project / "data/monitoring.yaml").write_text("quick: {sample_size: 2, seed: 5}\n")
    resources = tiny_resources(tiny_project, tmp_path)
    warehouse = Warehouse(tmp_path / "warehouse")
    with instance_for_tests() as instance:
        _, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top2"],
            resources=resources,
            show_progress=False,
        )
        assert failures == []
        full = current(warehouse, "retrieval_metrics")
        assert len(full) == 4 and set(full["evaluation_mode"]) == {"full"}
        (run_id,) = set(full["run_id"])
        run = instance.get_run_by_id(run_id)
        assert run is not None and set(full["evaluation_id"]) == {evaluation_id_of(run)}

        job = build_definitions(resources).resolve_job_def("evaluation_job")
        result = job.execute_in_process(
            instance=instance,
            partition_key=dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"}),
            run_config=evaluation_run_config("quick"),
            tags=evaluation_tags("eval-test-1", "quick"),
        )
        assert result.success
        sampled = {
            asset: set(current(warehouse, asset)["question_id"])
            for asset in ("retrieval_metrics", "answers", "answer_metrics", "retrieval_diagnostics")
        }
        assert len(sampled["retrieval_metrics"]) == 2
        assert sampled["answers"] == sampled["answer_metrics"] == sampled["retrieval_metrics"]
        assert sampled["retrieval_diagnostics"] == sampled["retrieval_metrics"]
        assert set(current(warehouse, "retrieval_results")["question_id"]) <= sampled["retrieval_metrics"]
        quick = current(warehouse, "retrieval_metrics")
        assert set(quick["evaluation_mode"]) == {"quick"} and set(quick["evaluation_id"]) == {"eval-test-1"}
        summaries = pd.concat(pd.read_parquet(f) for f in warehouse.history_files(RETRIEVAL_SUMMARY))
        assert sorted(summaries["evaluation_mode"]) == ["full", "quick"]
        assert sorted(summaries["n_questions"]) == [2, 4]
        # a quick run is of the same dataset: the regression check finds the full run before it
        assert summaries["dataset_sha256"].nunique() == 1
        board = pd.read_parquet(warehouse.current_path(LEADERBOARD))
        assert list(board["evaluation_mode"]) == ["full"]  # the leaderboard ran after the full run only

        # run config overrides the settings' sample size; an unknown mode fails with the key to fix
        result = job.execute_in_process(
            instance=instance,
            partition_key=dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"}),
            run_config=evaluation_run_config("quick", sample_size=3),
        )
        assert result.success and len(current(warehouse, "retrieval_metrics")) == 3
        # launched without the tag, a run is an evaluation of its own
        assert set(current(warehouse, "retrieval_metrics")["evaluation_id"]) == {result.run_id}
        bad = job.execute_in_process(
            instance=instance,
            partition_key=dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"}),
            run_config={"resources": {"evaluation": {"config": {"mode": "fast"}}}},
            raise_on_error=False,
        )
        assert not bad.success
        failure = next(e for e in bad.all_events if e.is_step_failure)
        assert "resources.evaluation.config.mode" in str(failure.step_failure_data.error.message)


def test_the_runs_a_run_supersedes_are_looked_up_once_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every table a partition's run writes asks which runs it replaces: the evaluation's runs created
    before it, looked up once; a run of the evaluation created later is not among them."""
    tags = evaluation_tags("eval-s", "full")
    with instance_for_tests() as instance:
        earlier, now = run(instance, "evaluation_job", tags), run(instance, "evaluation_job", tags)
        run(instance, "evaluation_job", evaluation_tags("eval-other", "full"))
        lookups = []
        get_run_ids = instance.get_run_ids

        def counted(*args: object, **kwargs: object) -> object:
            lookups.append(args)
            return get_run_ids(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(instance, "get_run_ids", counted)
        now_run = instance.get_run_by_id(now)
        assert now_run is not None
        assert superseded_runs(instance, now_run) == (earlier,)
        later = run(instance, "evaluation_job", tags)
        for _ in range(7):  # the partition's other tables
            assert superseded_runs(instance, now_run) == (earlier,)
        assert len(lookups) == 1
        later_run = instance.get_run_by_id(later)
        assert later_run is not None and set(superseded_runs(instance, later_run)) == {earlier, now}
        lone = instance.get_run_by_id(run(instance, "evaluation_job", {}))
        assert lone is not None and superseded_runs(instance, lone) == ()  # not part of an evaluation
