"""The monitoring settings the schedules are built with: their cron and time zone must be known when the
code location loads (the nightly evaluation, and retention after it)."""

from __future__ import annotations

import warnings

from ..core.errors import ConfigError
from ..core.monitoring import MonitoringSettings, load_monitoring_settings
from .resources import ProjectResource


def settings_at_load() -> MonitoringSettings:
    """The project's settings as the code location loads; a broken file must not take the sensors and
    the UI down with it: the defaults then, and every tick of the schedule fails naming the file and
    key (it reads the file again), until it is fixed."""
    project = ProjectResource()
    try:
        return load_monitoring_settings(project.path(project.monitoring_file))
    except ConfigError as exc:
        warnings.warn(f"nightly schedule at its default time: {exc}", stacklevel=1)
        return MonitoringSettings()
