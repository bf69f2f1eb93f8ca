"""History retention as a job: per-question rows kept whole for 30 days, then a seeded sample of 100
rows per file until 90 days, then only the aggregates (data/monitoring.yaml ``retention``; the logic is
in core/store/retention.py).

An op job, not an asset: it maintains the warehouse rather than producing data. Launched by hand it
is a dry run unless the run config says ``dry_run: false``; the schedule applies it. The schedule starts
STOPPED because retention deletes files for good: a team turns it on once the policy suits them
(`dagster schedule start retention_schedule` or the UI).
"""

from dataclasses import replace
from datetime import UTC, datetime

import dagster as dg
from pydantic import Field

from ...core.errors import ConfigError
from ...core.evaluation.baselines import BaselineStore
from ...core.runs.run_tags import KIND_TAG, MAINTENANCE_KIND
from ...core.settings.monitoring_settings import MonitoringSettings
from ...core.store.retention import apply_retention, describe, plan_retention
from ...lib.io_managers import WarehouseResource, warehouse_writes
from ...lib.resources import ProjectResource
from ...lib.step_failures import input_errors_fail_the_step
from ...lib.step_redaction import redacts_secrets


class RetentionConfig(dg.Config):
    dry_run: bool = Field(
        default=True, description="Only report what would be sampled and deleted; false applies it."
    )
    full_rows_days: int | None = Field(default=None, description="Overrides retention.full_rows_days.")
    sampled_rows_days: int | None = Field(default=None, description="Overrides retention.sampled_rows_days.")
    sampled_rows: int | None = Field(default=None, description="Overrides retention.sampled_rows.")


def retention_settings(project: ProjectResource, config: RetentionConfig) -> MonitoringSettings:
    """The project's settings with the run's overrides, validated like the file (errors name the key)."""
    settings = project.load_settings(MonitoringSettings)
    overrides = {
        name: value
        for name in ("full_rows_days", "sampled_rows_days", "sampled_rows")
        if (value := getattr(config, name)) is not None
    }
    try:
        return replace(settings, retention=replace(settings.retention, **overrides))
    except ConfigError as exc:
        raise ConfigError(
            f"retention_job: {exc} (settings from {settings.source}, overridden by the run config: "
            f"{overrides}); fix the run config or the file"
        ) from None


@dg.op(out=dg.Out(dg.Nothing))
@redacts_secrets
def apply_history_retention(
    context: dg.OpExecutionContext,
    config: RetentionConfig,
    project: ProjectResource,
    warehouse: WarehouseResource,
) -> dg.Output[None]:
    """Plans retention over <warehouse>/history (and lists the dataset history, which is kept), logs
    it, and applies it unless this is a dry run. The counts are the output's metadata."""
    with input_errors_fail_the_step():
        settings = retention_settings(project, config).retention
    pinned = {b.run_id for b in BaselineStore(warehouse.base_dir).pinned()}
    plan = plan_retention(warehouse.base_dir, settings, datetime.now(UTC), keep_run_ids=pinned)
    totals = plan.totals()
    context.log.info(
        f"retention over {warehouse.base_dir}: full rows {settings.full_rows_days} days, "
        f"{settings.sampled_rows} sampled rows until {settings.sampled_rows_days} days; "
        f"{totals['files']} files: {totals['files_to_sample']} to sample, {totals['files_to_delete']} to "
        f"delete, {totals['rows_removed']} of {totals['rows']} rows to remove"
    )
    for line in describe(plan.decisions):
        context.log.info(line)
    metadata: dict[str, dg.RawMetadataValue] = {
        "dry_run": config.dry_run,
        "full_rows_days": settings.full_rows_days,
        "sampled_rows_days": settings.sampled_rows_days,
        "sampled_rows": settings.sampled_rows,
        **{f"plan_{name}": value for name, value in totals.items()},
        "plan": dg.MetadataValue.md(plan.markdown()),
    }
    if config.dry_run:
        context.log.info("dry run: nothing changed (run config dry_run: false applies the plan)")
    else:
        with warehouse_writes():
            result = apply_retention(plan)
        for skipped in result.skipped:
            context.log.warning(f"skipped {skipped}")
        done = result.totals()
        context.log.info(
            f"retention applied: {done['files_sampled']} files sampled, {done['files_deleted']} deleted, "
            f"{done['rows_removed']} rows removed, {done['bytes_freed'] / 1e6:.2f} MB freed"
        )
        metadata.update(done)
    return dg.Output(None, metadata=metadata)


@dg.job(tags={KIND_TAG: MAINTENANCE_KIND})
def retention_job() -> None:
    """Prunes the Parquet history by age (data/monitoring.yaml `retention`); aggregates are kept."""
    apply_history_retention()


def build_retention_schedule(
    timezone: str = "UTC", default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED
) -> dg.ScheduleDefinition:
    """Daily at 03:00, after the 02:00 nightly evaluation, applying the plan (not a dry run)."""
    return dg.ScheduleDefinition(
        name="retention_schedule",
        job=retention_job,
        cron_schedule="0 3 * * *",
        execution_timezone=timezone,
        run_config=dg.RunConfig(ops={"apply_history_retention": RetentionConfig(dry_run=False)}),
        default_status=default_status,
        description="Applies history retention daily at 03:00 (data/monitoring.yaml `retention`).",
    )
