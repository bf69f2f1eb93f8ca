"""The monitoring settings the schedules are built with: Dagster takes a schedule's cron and time zone
when the definitions are built (the nightly evaluation, and retention after it), so
definitions.build_definitions reads them as the code location loads, never at import."""

from __future__ import annotations

import warnings

from ..core.errors import ConfigError
from ..core.settings.monitoring_settings import MonitoringSettings
from .resources import ProjectResource


def schedule_settings(project: ProjectResource) -> MonitoringSettings:
    """The project's settings; a broken file must not take the sensors and the UI down with it: the
    defaults then, with a warning, and every tick of the schedule fails naming the file and key (it
    reads the file again), until it is fixed."""
    try:
        return project.load_settings(MonitoringSettings)
    except ConfigError as exc:
        warnings.warn(f"nightly schedule at its default time: {exc}", stacklevel=2)
        return MonitoringSettings()
