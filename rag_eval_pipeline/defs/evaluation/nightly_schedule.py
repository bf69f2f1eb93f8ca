"""The nightly evaluation: every chunk config x profile partition that is not up to date (lib/freshness.py),
in the mode data/monitoring.yaml says.

The corpus and the configs are watched by sensors. With ``nightly.skip_up_to_date: false`` the night
re-evaluates what did not change too, so the history gets a point per night and a drift in a model or a
server shows up as a trend. The leaderboard follows by automation once the partitions settle.
"""

from collections.abc import Callable, Sequence
from datetime import datetime

import dagster as dg

from ...core.project.source_versions import source_versions
from ...core.runs.evaluation_ids import nightly_evaluation_id
from ...core.settings.monitoring_settings import MonitoringSettings
from ...lib.evaluation_runs import evaluation_run_config, evaluation_tags
from ...lib.freshness import NewestRecords, record_source_versions, stale_assets
from ...lib.partitions import CHUNK_CONFIG, PROFILE
from ...lib.resources import ProjectResource
from ...lib.stages import JOB_ASSETS
from ..jobs import evaluation_job


def nightly_requests(
    configs: Sequence[str], profiles: Sequence[str], settings: MonitoringSettings, scheduled: datetime
) -> list[dg.RunRequest]:
    """One run per partition, all tagged with the same evaluation id (so `rag-eval compare` and the
    report treat the night as one evaluation); run keys carry the date, so a tick runs once."""
    evaluation_id = nightly_evaluation_id(scheduled)
    mode = settings.nightly.mode
    return [
        dg.RunRequest(
            run_key=f"{evaluation_id}-{config}|{profile}",
            partition_key=dg.MultiPartitionKey({CHUNK_CONFIG: config, PROFILE: profile}),
            run_config=evaluation_run_config(mode),
            tags=evaluation_tags(evaluation_id, mode),
        )
        for config in configs
        for profile in profiles
    ]


def build_nightly_schedule(
    settings: MonitoringSettings, definitions: Callable[[], dg.Definitions]
) -> dg.ScheduleDefinition:
    """The schedule at the settings' cron and time zone (Dagster needs both when the definitions are
    built: definitions.build_definitions reads data/monitoring.yaml for them); ``definitions`` gives the
    definitions it belongs to, whose code versions tell what is up to date."""

    @dg.schedule(
        name="nightly_evaluation_schedule",
        job=evaluation_job,
        cron_schedule=settings.nightly.cron,
        execution_timezone=settings.nightly.timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
    def nightly(
        context: dg.ScheduleEvaluationContext, project: ProjectResource
    ) -> dg.SkipReason | list[dg.RunRequest]:
        """Evaluates every configured partition; names removed from the files are not evaluated (their
        history is kept)."""
        configs = project.load_configs()
        known_configs = set(context.instance.get_dynamic_partitions(CHUNK_CONFIG))
        known_profiles = set(context.instance.get_dynamic_partitions(PROFILE))
        chunk_configs = [c.name for c in configs.chunk_configs if c.name in known_configs]
        profiles = [p.name for p in configs.profiles if p.name in known_profiles]
        if not chunk_configs or not profiles:
            return dg.SkipReason(
                "no partitions yet: the partition_sync_sensor adds them from the config files "
                "(or run `rag-eval run` once)"
            )
        scheduled = context.scheduled_execution_time
        assert scheduled is not None
        monitoring = project.load_settings(MonitoringSettings)
        requests = nightly_requests(chunk_configs, profiles, monitoring, scheduled)
        if not monitoring.nightly.skip_up_to_date:
            return requests
        record_source_versions(context.instance, source_versions(project.files(), configs))
        defs, assets = definitions(), JOB_ASSETS[evaluation_job.name]
        newest = NewestRecords(context.instance, defs.resolve_asset_graph())  # one fetch per asset
        stale = [
            r
            for r in requests
            if stale_assets(context.instance, defs, assets, r.partition_key, r.run_config, newest)
        ]
        if not stale:
            return dg.SkipReason(
                f"all {len(requests)} partitions are up to date: nothing they read changed since they last "
                "ran (nightly.skip_up_to_date in data/monitoring.yaml)"
            )
        return stale

    return nightly
