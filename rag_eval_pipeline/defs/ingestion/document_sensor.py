"""Watches the corpus folder: an edited, added or removed document re-materializes the ingestion assets
(corpus, questions), and the assets downstream follow them (see defs/automation.py).

The cursor is the observed state of the folder (core/corpus/corpus_state.py), never the clock: a document is
changed when its content hash is, so touching a file requests nothing, and a file older than the last
tick is still seen.
"""

import dagster as dg

from ...core.corpus.corpus_state import (
    CorpusChanges,
    CorpusCursor,
    CorpusState,
    diff_states,
    scan_corpus_folder,
)
from ...core.project.source_versions import VERSION_CHARS, SourceVersions
from ...core.runs.run_tags import DOCUMENTS_TAG_PREFIX
from ...lib.freshness import changed_source_observations
from ...lib.resources import ProjectResource
from ..jobs import ingestion_job

_TAG_NAMES = 3  # documents named per tag; the rest are counted ("+2 more")


@dg.sensor(job=ingestion_job, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING)
def document_sensor(context: dg.SensorEvaluationContext, project: ProjectResource) -> dg.SensorResult:
    """Requests ingestion_job when a document of the corpus folder changed since the last tick (on the
    first tick: when the folder differs from the corpus last materialized)."""
    cursor = CorpusCursor.from_json(context.cursor) if context.cursor else None
    scan = scan_corpus_folder(
        project.corpus_folder(), project.corpus_pattern(), cursor.state if cursor else None
    )
    state = scan.state
    requests = cursor.requests if cursor else 0
    # the documents' version, so the UI shows what an edit made stale (lib/freshness.py)
    observed = changed_source_observations(
        context.instance, SourceVersions(state.corpus_sha256[:VERSION_CHARS], None)
    )
    if cursor is None:
        materialized = materialized_corpus_sha256(context.instance)
        if materialized == state.corpus_sha256:
            return dg.SensorResult(
                skip_reason=f"watching {len(state.files)} documents; the corpus was last materialized from "
                "exactly these",
                asset_events=observed,
                cursor=CorpusCursor(state, requests).to_json(),
            )
        why = (
            "the corpus was never materialized"
            if materialized is None
            else "the folder differs from the corpus last materialized"
        )
        # which documents differ is unknown without a previous state: count them instead of naming them
        tags = {f"{DOCUMENTS_TAG_PREFIX}initial": str(len(state.files))}
    else:
        changes = diff_states(cursor.state, state)
        if not changes:
            return dg.SensorResult(
                skip_reason=f"no document changed ({len(state.files)} watched, {len(scan.hashed)} re-hashed)",
                asset_events=observed,
                cursor=CorpusCursor(state, requests).to_json(),
            )
        why = describe(changes)
        tags = change_tags(changes)
    context.log.info(f"requesting ingestion_job: {why}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=run_key(state, requests), tags=tags)],
        asset_events=observed,
        cursor=CorpusCursor(state, requests + 1).to_json(),
    )


def run_key(state: CorpusState, requests: int) -> str:
    """The corpus hash (as the corpus asset's ``corpus_sha256`` metadata will say) and the request
    number: run keys are deduplicated forever, so undoing an edit must not reuse an old key."""
    return f"corpus-{state.corpus_sha256[:16]}-{requests}"


def change_tags(changes: CorpusChanges) -> dict[str, str]:
    """Short tags for the run list: which documents changed, a few names each, the rest counted."""
    tags = {}
    for kind, paths in (("added", changes.added), ("changed", changes.changed), ("removed", changes.removed)):
        if paths:
            names = ", ".join(paths[:_TAG_NAMES])
            more = len(paths) - _TAG_NAMES
            tags[f"{DOCUMENTS_TAG_PREFIX}{kind}"] = names + (f" (+{more} more)" if more > 0 else "")
    return tags


def describe(changes: CorpusChanges) -> str:
    return ", ".join(
        f"{len(paths)} {kind}"
        for kind, paths in (
            ("added", changes.added),
            ("changed", changes.changed),
            ("removed", changes.removed),
        )
        if paths
    )


def materialized_corpus_sha256(instance: dg.DagsterInstance) -> str | None:
    """The ``corpus_sha256`` metadata of the latest corpus materialization; None if there is none."""
    event = instance.get_latest_materialization_event(dg.AssetKey("corpus"))
    materialization = event.asset_materialization if event is not None else None
    if materialization is None:
        return None
    value = materialization.metadata.get("corpus_sha256")
    return str(value.value) if value is not None else None
