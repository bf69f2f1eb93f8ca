"""The regression checks in Dagster: a real instance, the Parquet IO manager and history in tmp_path.

Most tests give the check a stand-in ``retrieval_metrics``/``answer_metrics`` asset (made by the same
``metrics_asset`` as the real one, returning rows with known values) so the numbers in the metadata can
be checked exactly; the last one runs the real evaluation_job twice on the tiny project.
"""

from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.evaluation.baselines import BaselineStore
from rag_eval_pipeline.core.significant_digits import significant
from rag_eval_pipeline.core.store.history import HistoryStore
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory, WarehouseResource
from rag_eval_pipeline.lib.partition_sync import sync_partitions
from rag_eval_pipeline.lib.regression_checks import REGRESSION, metrics_asset
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.history_files import at, retrieval_rows, write_run
from rag_eval_pipeline_tests.instances import instance_for_tests

KEY = dg.MultiPartitionKey({"chunk_config": "c", "profile": "p"})
QUESTIONS = [f"q{i:02d}" for i in range(12)]
BASE = np.linspace(0.4, 0.95, len(QUESTIONS))


def metrics(recall: np.ndarray, iou: np.ndarray | None = None) -> dict[str, dict[str, float]]:
    iou = BASE / 4 if iou is None else iou
    return {
        "span_recall": dict(zip(QUESTIONS, recall, strict=True)),
        "span_iou": dict(zip(QUESTIONS, iou, strict=True)),
        "recall_at_k": dict(zip(QUESTIONS, BASE, strict=True)),
        "mrr": dict(zip(QUESTIONS, BASE, strict=True)),
    }


def stand_in(name: str, frame: pd.DataFrame) -> dg.AssetsDefinition:
    """The metric asset with its check, as ``metrics_asset`` makes the real one: ``frame`` stamped with
    this run's id, stored by the IO manager (current file and history file) like the real asset's output."""

    def body(
        context: dg.AssetExecutionContext, project: ProjectResource, warehouse: WarehouseResource
    ) -> dg.MaterializeResult:
        return dg.MaterializeResult(value=frame.assign(run_id=context.run.run_id))

    body.__name__ = name
    return metrics_asset("stand-in", group_name="evaluation", kinds={"parquet"})(body)


def run_check(
    root: Path,
    frame: pd.DataFrame,
    table: str = "retrieval_metrics",
    raise_on_error: bool = True,
    instance: dg.DagsterInstance | None = None,
    check_alone: bool = False,
) -> tuple[dg.ExecuteInProcessResult, Any]:
    """Materializes the stand-in of ``table`` holding ``frame`` with its check (``check_alone``: the
    check only, as the UI runs it), in ``instance`` or a new one in memory."""
    warehouse = root / "warehouse"
    if instance is None:
        with dg.DagsterInstance.ephemeral() as fresh:  # in memory: a fraction of a second to set up
            return run_check(root, frame, table, raise_on_error, fresh, check_alone)
    instance.add_dynamic_partitions("chunk_config", ["c"])
    instance.add_dynamic_partitions("profile", ["p"])
    asset = stand_in(table, frame)
    job = dg.Definitions(
        assets=[asset],
        jobs=[dg.define_asset_job("check_job")],
        resources={
            "project": ProjectResource(root=str(root)),
            "warehouse": WarehouseResource(base_dir=str(warehouse)),
            "io_manager": ParquetIOManagerFactory(base_dir=str(warehouse)),
        },
    ).resolve_job_def("check_job")
    if check_alone:  # the subset the UI launches for a check selected without its asset
        job = job.get_subset(asset_selection=set(), asset_check_selection=set(asset.check_keys))
    result = job.execute_in_process(instance=instance, partition_key=KEY, raise_on_error=raise_on_error)
    evaluations = result.get_asset_check_evaluations()
    return result, evaluations[0] if evaluations else None


def values(evaluation: Any) -> dict[str, Any]:
    return {k: v.value for k, v in evaluation.metadata.items()}


def now_rows(recall: np.ndarray, **kwargs: Any) -> pd.DataFrame:
    return retrieval_rows("(this run)", "c", "p", metrics(recall), at(10), **kwargs)


def test_the_first_run_passes_with_no_baseline(tmp_path: Path) -> None:
    _, evaluation = run_check(tmp_path, now_rows(BASE))
    meta = values(evaluation)
    assert evaluation.passed and evaluation.partition == "c|p"
    assert meta["baseline_source"] == "none" and meta["baseline_run_id"] == ""
    assert "this run is the first reference" in meta["baseline_detail"]
    assert meta["evaluation_mode"] == "full"  # rows without the evaluation columns: the warehouse's rule


def test_a_significant_drop_beyond_the_margin_fails_with_severity_error_and_its_numbers(
    tmp_path: Path,
) -> None:
    write_run(tmp_path / "warehouse", retrieval_rows("older", "c", "p", metrics(BASE + 0.01), at(0)))
    write_run(
        tmp_path / "warehouse",
        retrieval_rows("base-run", "c", "p", metrics(BASE), at(1), evaluation_id="eval-1", mode="full"),
    )
    worse = BASE - 0.1 + np.tile([0.01, -0.01], 6)
    result, evaluation = run_check(tmp_path, now_rows(worse, evaluation_id="eval-2", mode="full"))
    meta = values(evaluation)
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert (meta["baseline_source"], meta["baseline_run_id"], meta["baseline_evaluation_id"]) == (
        "previous_run",
        "base-run",
        "eval-1",
    )
    assert meta["run_id"] == result.run_id and meta["failed_metrics"] == "span_recall"
    assert meta["span_recall_mean_baseline"] == significant(BASE.mean())  # as the UI shows it
    assert meta["span_recall_mean_now"] == significant(worse.mean())
    assert meta["span_recall_delta"] == pytest.approx(-0.1) and meta["span_recall_delta"] == significant(
        meta["span_recall_delta"]
    )
    assert meta["span_recall_ci_low"] < -0.1 < meta["span_recall_ci_high"] < 0
    assert (
        meta["span_recall_margin"] == 0.02 and meta["span_recall_n_paired"] == 12 and meta["n_paired"] == 12
    )
    # the unchanged metrics pass
    assert meta["span_iou_delta"] == 0 and meta["span_iou_failed"] is False and meta["mrr_failed"] is False
    assert "| span_recall | 12 |" in meta["regression"] and "FAILED" in meta["regression"]


def test_the_check_reads_its_own_partition_only(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    write_run(warehouse, retrieval_rows("base-run", "c", "p", metrics(BASE), at(1)))
    # a later, better run of another partition, and a file there no reader can open
    write_run(warehouse, retrieval_rows("elsewhere", "c", "q", metrics(BASE + 0.3), at(2)))
    other = Warehouse(warehouse).history_partition_dir(
        "retrieval_metrics", {"chunk_config": "c", "profile": "q"}
    )
    (other / "damaged.parquet").write_bytes(b"not parquet")
    _, evaluation = run_check(tmp_path, now_rows(BASE - 0.1 + np.tile([0.01, -0.01], 6)))
    meta = values(evaluation)
    assert (meta["baseline_source"], meta["baseline_run_id"], meta["n_baseline"]) == (
        "previous_run",
        "base-run",
        12,
    )
    assert meta["span_recall_mean_baseline"] == pytest.approx(BASE.mean()) and not evaluation.passed


def test_a_drop_within_the_configured_margin_passes(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "monitoring.yaml").write_text("regression:\n  margin: 0.15\n", encoding="utf-8")
    write_run(tmp_path / "warehouse", retrieval_rows("base-run", "c", "p", metrics(BASE), at(1)))
    _, evaluation = run_check(tmp_path, now_rows(BASE - 0.1 + np.tile([0.01, -0.01], 6)))
    meta = values(evaluation)
    assert evaluation.passed and meta["margin"] == 0.15 and meta["span_recall_margin"] == 0.15
    assert meta["span_recall_ci_high"] < 0  # significant, but within the margin
    assert meta["failed_metrics"] == ""


def test_a_pinned_baseline_is_used_instead_of_the_previous_run(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    write_run(
        warehouse,
        retrieval_rows(
            "great", "c", "p", metrics(BASE + 0.2), at(0), evaluation_id="eval-great", mode="full"
        ),
    )
    write_run(warehouse, retrieval_rows("previous", "c", "p", metrics(BASE), at(1)))
    with HistoryStore(warehouse) as history:
        BaselineStore(warehouse).pin(history.resolve("eval-great").runs)
    _, evaluation = run_check(tmp_path, now_rows(BASE))  # as good as the previous run, far below the pin
    meta = values(evaluation)
    assert not evaluation.passed and (meta["baseline_source"], meta["baseline_run_id"]) == ("pinned", "great")
    assert meta["span_recall_delta"] == pytest.approx(-0.2)


def test_a_pinned_baseline_whose_rows_are_gone_fails_with_a_warning(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    path = write_run(warehouse, retrieval_rows("pinned", "c", "p", metrics(BASE), at(0)))
    write_run(warehouse, retrieval_rows("previous", "c", "p", metrics(BASE), at(1)))
    with HistoryStore(warehouse) as history:
        BaselineStore(warehouse).pin(history.resolve("pinned").runs)
    path.unlink()  # e.g. removed by retention
    _, evaluation = run_check(tmp_path, now_rows(BASE))
    meta = values(evaluation)
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    assert (meta["baseline_source"], meta["baseline_run_id"]) == ("pinned", "")
    assert "pinned baseline run pinned" in evaluation.description


def test_a_quick_run_is_checked_on_its_sample_and_never_becomes_a_baseline(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    write_run(
        warehouse, retrieval_rows("full", "c", "p", metrics(BASE), at(0), evaluation_id="e1", mode="full")
    )
    write_run(
        warehouse,
        retrieval_rows("quick-bad", "c", "p", metrics(BASE - 0.3), at(1), evaluation_id="e2", mode="quick"),
    )
    sample = now_rows(BASE - 0.3, evaluation_id="e3", mode="quick").iloc[::3]
    _, evaluation = run_check(tmp_path, sample)
    meta = values(evaluation)
    assert meta["baseline_run_id"] == "full" and meta["evaluation_mode"] == "quick"
    assert (meta["n_now"], meta["n_baseline"], meta["span_recall_n_paired"]) == (4, 12, 4)
    assert meta["span_recall_mean_baseline"] == pytest.approx(BASE[::3].mean())
    assert not evaluation.passed


def answer_rows(run_id: str, keyword: list[float | None], status: list[str], hour: float) -> pd.DataFrame:
    n = len(keyword)
    return pd.DataFrame(
        {
            "run_id": run_id,
            "created_at": pd.Timestamp(at(hour)),
            "chunk_config": "c",
            "profile": "p",
            "dataset_sha256": "data-1",
            "question_id": QUESTIONS[:n],
            "keyword": pd.array(keyword, dtype="Float64"),
            "keyword_status": status,
            "keyword_detail": "",
            "semantic_dynamic": pd.array([0.8] * n, dtype="Float64"),
            "semantic_dynamic_status": "ok",
            "semantic_dynamic_detail": "",
        }
    )


def test_the_answer_check_counts_only_questions_where_the_metric_is_ok(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    base = answer_rows("answers-1", [1.0] * 8, ["ok"] * 6 + ["failed", "skipped"], 0)
    base.loc[6:, "keyword"] = None
    Warehouse(warehouse).write_history(
        base, "answer_metrics", {"chunk_config": "c", "profile": "p"}, "answers-1"
    )
    now = answer_rows(
        "(this run)", [0.0, 0.0, 0.0, 0.0, None, None, 0.0, 0.0], ["ok"] * 4 + ["failed"] * 2 + ["ok"] * 2, 5
    )
    _, evaluation = run_check(tmp_path, now, "answer_metrics")
    meta = values(evaluation)
    assert meta["baseline_run_id"] == "answers-1" and meta["keyword_n_paired"] == 4
    assert (meta["keyword_mean_baseline"], meta["keyword_mean_now"], meta["keyword_delta"]) == (
        1.0,
        0.0,
        -1.0,
    )
    assert meta["semantic_dynamic_n_paired"] == 8 and meta["semantic_dynamic_delta"] == 0
    assert not evaluation.passed and meta["failed_metrics"] == "keyword"


def test_a_metric_the_table_lacks_fails_the_check_naming_the_settings_key(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "monitoring.yaml").write_text(
        "regression:\n  metrics: [span_recall, span_iouu]\n", encoding="utf-8"
    )
    result, evaluation = run_check(tmp_path, now_rows(BASE), raise_on_error=False)
    assert evaluation is None and not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert (
        "monitoring.yaml: regression.metrics names span_iouu, which retrieval_metrics does not have"
        in message
    )
    # the check runs in the asset's step, after its output: the metrics are stored all the same
    [stored] = result.get_asset_materialization_events()
    assert stored.partition == str(KEY)
    current = Warehouse(tmp_path / "warehouse").read_current("retrieval_metrics", dict(KEY.keys_by_dimension))
    assert current is not None and set(current["run_id"]) == {result.run_id}


def test_the_check_runs_alone_on_the_stored_rows_after_a_baseline_is_pinned(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    write_run(
        warehouse, retrieval_rows("great", "c", "p", metrics(BASE + 0.2), at(0), evaluation_id="e-great")
    )
    write_run(warehouse, retrieval_rows("previous", "c", "p", metrics(BASE), at(1)))
    with dg.DagsterInstance.ephemeral() as instance:
        first, evaluation = run_check(tmp_path, now_rows(BASE), instance=instance)
        assert evaluation.passed and values(evaluation)["baseline_run_id"] == "previous"
        with HistoryStore(warehouse) as history:
            BaselineStore(warehouse).pin(history.resolve("e-great").runs)
        # the check alone (the UI's Execute on it): other rows handed to the body are never used
        alone, evaluation = run_check(tmp_path, now_rows(BASE + 0.5), instance=instance, check_alone=True)
    meta = values(evaluation)
    assert alone.success and not alone.get_asset_materialization_events()
    assert not evaluation.passed and (meta["baseline_source"], meta["baseline_run_id"]) == ("pinned", "great")
    assert meta["run_id"] == first.run_id and meta["span_recall_delta"] == pytest.approx(-0.2)


def test_the_check_alone_before_any_materialization_says_what_to_do(tmp_path: Path) -> None:
    result, evaluation = run_check(tmp_path, now_rows(BASE), check_alone=True, raise_on_error=False)
    assert evaluation is None and not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert "retrieval_metrics of c|p has never been materialized" in message
    assert "materialize retrieval_metrics for the partition" in message


def test_the_evaluation_job_runs_the_checks(tmp_path: Path) -> None:
    defs = build_definitions(tiny_resources(tmp_path, tmp_path))
    selected = {
        name: defs.resolve_job_def(name).asset_layer.asset_graph.asset_check_keys
        for name in ("evaluation_job", "leaderboard_job")
    }
    expected = {dg.AssetCheckKey(dg.AssetKey(a), REGRESSION) for a in ("retrieval_metrics", "answer_metrics")}
    assert expected <= set(selected["evaluation_job"])
    assert not expected & set(selected["leaderboard_job"])


@pytest.mark.slow
def test_two_real_evaluations_the_second_checked_against_the_first(
    tiny_project: Path, tmp_path: Path
) -> None:
    resources = tiny_resources(tiny_project, tmp_path)
    defs = build_definitions(resources)
    key = dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top4"})
    project = resources["project"]
    assert isinstance(project, ProjectResource)
    with instance_for_tests() as instance:
        sync_partitions(instance, project.load_configs())
        assert defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance).success
        chunking = defs.resolve_job_def("chunking_job")
        assert chunking.execute_in_process(instance=instance, partition_key="fixed-60-0").success
        first = defs.resolve_job_def("evaluation_job").execute_in_process(
            instance=instance, partition_key=key
        )
        checks = {e.asset_key.to_user_string(): e for e in first.get_asset_check_evaluations()}
        assert set(checks) == {"retrieval_metrics", "answer_metrics"}
        assert all(e.passed and values(e)["baseline_source"] == "none" for e in checks.values())

        # the profile now retrieves one chunk instead of four: recall can only fall
        profiles = tiny_project / "data" / "retrieval_profiles.yaml"
        profiles.write_text(
            profiles.read_text(encoding="utf-8").replace("top_k: 4", "top_k: 1"), encoding="utf-8"
        )
        second = defs.resolve_job_def("evaluation_job").execute_in_process(
            instance=instance, partition_key=key
        )
    meta = values(
        next(
            e for e in second.get_asset_check_evaluations() if e.asset_key == dg.AssetKey("retrieval_metrics")
        )
    )
    assert (meta["baseline_source"], meta["baseline_run_id"]) == ("previous_run", first.run_id)
    w, partition = Warehouse(tmp_path / "warehouse"), {"chunk_config": "fixed-60-0", "profile": "top4"}
    before = pd.read_parquet(w.history_path("retrieval_metrics", partition, first.run_id))
    after = pd.read_parquet(w.history_path("retrieval_metrics", partition, second.run_id))
    for metric in ("span_recall", "recall_at_k"):
        assert meta[f"{metric}_mean_baseline"] == significant(before[metric].mean())
        assert meta[f"{metric}_mean_now"] == significant(after[metric].mean())
        assert meta[f"{metric}_n_paired"] == len(before) == 4
    assert meta["span_recall_delta"] < 0
