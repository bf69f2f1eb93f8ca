"""What a planned run would redo for nothing: its assets that are up to date (lib/freshness.py), judged
right before it would start, after the stages before it ran."""

from __future__ import annotations

import dagster as dg

from ..core.project.source_versions import source_versions
from ..lib.freshness import NewestRecords, record_source_versions, stale_assets
from ..lib.resources import ProjectResource
from ..lib.stages import JOB_ASSETS
from .plan import EvaluationRequest, PlannedRun, run_config_for


class UpToDate:
    """Records the sources' versions now (observations: what freshness is judged by), then answers, per
    planned run, which of its assets must run."""

    def __init__(
        self, instance: dg.DagsterInstance, defs: dg.Definitions | None = None, project: object | None = None
    ) -> None:
        from ..definitions import build_definitions

        self.instance = instance
        self.defs = defs if defs is not None else build_definitions()
        self.newest = NewestRecords(instance, self.defs.resolve_asset_graph())
        project = project or ProjectResource()
        assert isinstance(project, ProjectResource)
        record_source_versions(instance, source_versions(project.files()))

    def stale(self, planned: PlannedRun, request: EvaluationRequest) -> dict[str, str]:
        """The run's assets that must run, each with why (none: the run is up to date)."""
        evaluation_config = (
            run_config_for(planned, request.mode, request.sample_size)
            if planned.stage == "evaluation"
            else None
        )
        return stale_assets(
            self.instance,
            self.defs,
            JOB_ASSETS[planned.job_name],
            planned.partition_key,
            evaluation_config,
            self.newest,
        )

    def ran(self) -> None:
        """A run materialized something: the newest records are fetched again."""
        self.newest.forget()
