from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, MODE_TAG
from rag_eval_pipeline.core.settings.monitoring_settings import MonitoringSettings
from rag_eval_pipeline.core.settings.settings_file import load_settings
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.defs.evaluation.nightly_schedule import build_nightly_schedule
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.conftest import TinyRunFactory, tiny_resources
from rag_eval_pipeline_tests.instances import instance_for_tests

# the schedule as a project without data/monitoring.yaml has it; each tick reads the file itself
NIGHTLY = build_nightly_schedule(MonitoringSettings(), build_definitions)


def evaluate(
    instance: dg.DagsterInstance, project: Path, when: datetime, schedule: dg.ScheduleDefinition = NIGHTLY
) -> object:
    # closed after the tick: the context opens its own instance, which would otherwise stay Dagster's
    # current one after the test (and fail a later test that loads definitions)
    with dg.build_schedule_context(
        instance=instance,
        scheduled_execution_time=when,
        resources={"project": ProjectResource(root=str(project))},
    ) as context:
        return schedule(context)


def test_the_nightly_schedule_evaluates_every_configured_partition(tiny_project: Path):
    (tiny_project / "data/monitoring.yaml").write_text("nightly:\n  mode: quick\n")
    night = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
    with instance_for_tests() as instance:
        skipped = evaluate(instance, tiny_project, night)
        assert isinstance(skipped, dg.SkipReason) and "partition_sync_sensor" in str(skipped.skip_message)

        instance.add_dynamic_partitions("chunk_config", ["fixed-60-0", "recursive-120-20", "removed-config"])
        instance.add_dynamic_partitions("profile", ["top2", "top4"])
        requests = evaluate(instance, tiny_project, night)
        assert isinstance(requests, list)
        # a partition whose config left the files keeps its history but is not evaluated
        assert sorted(str(r.partition_key) for r in requests) == [
            "fixed-60-0|top2",
            "fixed-60-0|top4",
            "recursive-120-20|top2",
            "recursive-120-20|top4",
        ]
        assert {r.tags[EVALUATION_ID_TAG] for r in requests} == {"nightly-20261123T0200"}
        assert {r.tags[MODE_TAG] for r in requests} == {"quick"}
        assert all(
            r.run_config == {"resources": {"evaluation": {"config": {"mode": "quick"}}}} for r in requests
        )
        assert len({r.run_key for r in requests}) == 4
        tomorrow = evaluate(instance, tiny_project, datetime(2026, 11, 24, 2, 0, tzinfo=UTC))
        assert isinstance(tomorrow, list)
        assert not {r.run_key for r in requests} & {r.run_key for r in tomorrow}


def test_the_schedule_is_on_by_default_at_two_in_the_morning_and_targets_the_evaluation():
    schedule = NIGHTLY
    assert schedule.cron_schedule == "0 2 * * *"
    assert schedule.execution_timezone == "UTC"
    assert schedule.job_name == "evaluation_job"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING


def test_the_time_and_zone_come_from_the_settings(tmp_path: Path):
    path = tmp_path / "monitoring.yaml"
    path.write_text("nightly:\n  cron: '30 4 * * 1-5'\n  timezone: Europe/Berlin\n")
    schedule = build_nightly_schedule(load_settings(path, MonitoringSettings), build_definitions)
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("30 4 * * 1-5", "Europe/Berlin")


def test_the_definitions_read_the_project_settings_as_they_are_built(tiny_project: Path, tmp_path: Path):
    """Read when the code location loads (not when a module is imported), from the project of the
    definitions' resources; retention follows the nightly run in its time zone."""
    (tiny_project / "data/monitoring.yaml").write_text(
        "nightly: {cron: '15 1 * * *', timezone: Asia/Tokyo}\n"
    )
    defs = build_definitions(tiny_resources(tiny_project, tmp_path / "work"))
    nightly = defs.resolve_schedule_def("nightly_evaluation_schedule")
    assert (nightly.cron_schedule, nightly.execution_timezone) == ("15 1 * * *", "Asia/Tokyo")
    retention = defs.resolve_schedule_def("retention_schedule")
    assert (retention.cron_schedule, retention.execution_timezone) == ("0 3 * * *", "Asia/Tokyo")


def test_a_broken_file_does_not_stop_the_code_location_but_fails_every_tick(
    tiny_project: Path, tmp_path: Path
):
    (tiny_project / "data/monitoring.yaml").write_text("nightly: {timezone: Mars/Olympus}\n")
    with pytest.warns(UserWarning, match="nightly schedule at its default time: .*nightly.timezone"):
        defs = build_definitions(tiny_resources(tiny_project, tmp_path / "work"))
    nightly = defs.resolve_schedule_def("nightly_evaluation_schedule")
    assert (nightly.cron_schedule, nightly.execution_timezone) == ("0 2 * * *", "UTC")
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["fixed-60-0"])
        instance.add_dynamic_partitions("profile", ["top2"])
        with pytest.raises(ConfigError, match="monitoring.yaml: nightly.timezone"):
            evaluate(instance, tiny_project, datetime(2026, 11, 23, 2, 0, tzinfo=UTC))


@pytest.mark.slow
def test_the_night_skips_the_partitions_that_are_up_to_date(tiny_run: TinyRunFactory):
    """A partition evaluated since its sources, code and models last changed is not requested;
    ``nightly.skip_up_to_date: false`` requests every partition (a point per night)."""
    run = tiny_run(["fixed-60-0"], ["top2"])  # evaluated without failures
    tiny_project, resources = run.project, run.resources()
    schedule = build_nightly_schedule(MonitoringSettings(), lambda: build_definitions(resources))
    night = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
    with run.instance() as instance:
        requests = evaluate(instance, tiny_project, night, schedule)
        assert isinstance(requests, list)
        assert sorted(str(r.partition_key) for r in requests) == [
            "fixed-60-0|top4",
            "recursive-120-20|top2",
            "recursive-120-20|top4",
        ]
        (tiny_project / "data/monitoring.yaml").write_text("nightly:\n  skip_up_to_date: false\n")
        every = evaluate(instance, tiny_project, night, schedule)
        assert isinstance(every, list) and len(every) == 4
