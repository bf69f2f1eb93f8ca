"""The search as a job the UI launches (Launchpad: ``search_job``), and the sensor that launches it when
data/search.yaml changes. The sensor starts stopped: a search embeds and queries a lot, so it races only
when someone asked for it (launch the job, or switch the sensor on to search again on every edit)."""

from __future__ import annotations

import hashlib

import dagster as dg

from ...lib.resources import ProjectResource

search_job = dg.define_asset_job(
    "search_job", selection=["search_outcome"], executor_def=dg.in_process_executor
)


@dg.sensor(job=search_job, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.STOPPED)
def search_sensor(context: dg.SensorEvaluationContext, project: ProjectResource) -> dg.SensorResult:
    """Requests search_job when the content of data/search.yaml changed since the last tick (its first
    tick only records it: switching the sensor on is not asking for a search)."""
    path = project.path(project.search_file)
    try:
        content = path.read_bytes() if path.exists() else b"<missing>"
    except OSError as exc:
        return dg.SensorResult(skip_reason=f"cannot read {path}: {exc}", cursor=context.cursor)
    digest = hashlib.sha256(content).hexdigest()[:16]
    if context.cursor is None:
        return dg.SensorResult(skip_reason=f"watching {path}; launch search_job to search now", cursor=digest)
    if context.cursor == digest:
        return dg.SensorResult(skip_reason=f"{path} did not change", cursor=digest)
    context.log.info(f"requesting search_job: {path} changed")
    # run keys are deduplicated forever: the previous content in the key lets an undone edit search again
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"search-{context.cursor}-{digest}")], cursor=digest
    )
