"""retention_job on a test instance and a tmp warehouse: a dry run by default, applied by the run
config or the schedule, settings from the project's data/monitoring.yaml with run-config overrides."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.defs.maintenance.retention import build_retention_schedule, retention_job
from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory, WarehouseResource
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.core.store.test_retention import snapshot, write_warehouse
from rag_eval_pipeline_tests.instances import instance_for_tests

MONITORING = """\
retention:
  full_rows_days: 30
  sampled_rows_days: 90
  sampled_rows: 6
"""


@pytest.fixture
def defs(tmp_path: Path) -> dg.Definitions:
    """The job and schedule with the project's kind of resources, the Parquet IO manager included (the
    op's output is Nothing, so it must not reach the IO manager)."""
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "monitoring.yaml").write_text(MONITORING, encoding="utf-8")
    warehouse = str(tmp_path / "warehouse")
    return dg.Definitions(
        jobs=[retention_job],
        schedules=[build_retention_schedule()],
        resources={
            "project": ProjectResource(root=str(project)),
            "warehouse": WarehouseResource(base_dir=warehouse),
            "io_manager": ParquetIOManagerFactory(base_dir=warehouse),
        },
    )


def run(defs: dg.Definitions, **config: Any) -> tuple[dg.ExecuteInProcessResult, dict[str, Any], list[str]]:
    """The run, its output metadata and its log messages."""
    with instance_for_tests() as instance:
        result = defs.resolve_job_def("retention_job").execute_in_process(
            run_config={"ops": {"apply_history_retention": {"config": config}}} if config else None,
            instance=instance,
            raise_on_error=False,
        )
        messages = [e.user_message for e in instance.all_logs(result.run_id)]
    outputs = [e for e in result.all_node_events if e.is_successful_output]
    metadata = {k: v.value for k, v in outputs[0].step_output_data.metadata.items()} if outputs else {}
    return result, metadata, messages


def test_a_launch_without_config_is_a_dry_run(defs: dg.Definitions, tmp_path: Path):
    warehouse = tmp_path / "warehouse"
    write_warehouse(warehouse, datetime.now(UTC))
    before = snapshot(warehouse)
    result, metadata, messages = run(defs)
    assert result.success
    assert snapshot(warehouse) == before
    assert metadata["dry_run"] is True and metadata["sampled_rows"] == 6  # from data/monitoring.yaml
    assert (metadata["plan_files_to_sample"], metadata["plan_files_to_delete"]) == (3, 2)
    assert "| retrieval_results | 1 | 1 | 1 | 108 | 42 |" in metadata["plan"]
    assert any("dry run: nothing changed" in m for m in messages)
    assert any(m.startswith("delete ") and "old.parquet (100.0 days old" in m for m in messages)


def test_applied_with_overrides_the_job_samples_instead_of_deleting(defs: dg.Definitions, tmp_path: Path):
    paths = write_warehouse(tmp_path / "warehouse", datetime.now(UTC))
    sampled = [
        paths[k] for k in ("metrics/middle", "metrics/old", "results/middle", "results/old", "corpus/middle")
    ]
    size_before = sum(p.stat().st_size for p in sampled)
    result, metadata, messages = run(defs, dry_run=False, sampled_rows_days=200)
    assert result.success
    assert (metadata["files_sampled"], metadata["files_deleted"]) == (5, 0)
    assert metadata["rows_removed"] == 2 * (12 - 6) + 2 * (36 - 6) + (20 - 6)
    # tiny files can grow by the mark; the figure is what happened, not an estimate
    assert metadata["bytes_freed"] == size_before - sum(p.stat().st_size for p in sampled)
    assert metadata["sampled_rows_days"] == 200
    assert len(pd.read_parquet(paths["metrics/old"])) == 6
    assert len(pd.read_parquet(paths["metrics/young"])) == 12
    assert len(pd.read_parquet(paths["summary/old"])) == 1
    assert any(m.startswith("retention applied: 5 files sampled, 0 deleted") for m in messages)


def test_an_impossible_override_fails_naming_the_key(defs: dg.Definitions, tmp_path: Path):
    write_warehouse(tmp_path / "warehouse", datetime.now(UTC))
    before = snapshot(tmp_path / "warehouse")
    result, _, _ = run(defs, dry_run=False, sampled_rows_days=10)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert "retention.sampled_rows_days must be an integer >= 30" in message and "monitoring.yaml" in message
    assert snapshot(tmp_path / "warehouse") == before


def test_the_schedule_applies_retention_daily_and_starts_stopped(defs: dg.Definitions, tmp_path: Path):
    paths = write_warehouse(tmp_path / "warehouse", datetime.now(UTC))
    with instance_for_tests() as instance:
        # resolved while a test instance is current: Dagster's definitions loading looks one up
        schedule = defs.resolve_schedule_def("retention_schedule")
        assert schedule.cron_schedule == "0 3 * * *"
        assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
        with dg.build_schedule_context(
            instance=instance, scheduled_execution_time=datetime.now(UTC)
        ) as context:
            requests = schedule.evaluate_tick(context).run_requests
        assert requests is not None and len(requests) == 1
        result = defs.resolve_job_def("retention_job").execute_in_process(
            run_config=requests[0].run_config, instance=instance
        )
    assert result.success
    assert not paths["metrics/old"].exists() and len(pd.read_parquet(paths["metrics/middle"])) == 6
