"""Which assets of a run are out of date, by Dagster's own code and data versions, as the UI judges
staleness: an asset partition is up to date when it was materialized with the current code version,
and no input it read (an upstream asset partition or a source: defs/ingestion/sources.py) has a new data
version since. `rag-eval run` and the nightly schedule skip what is up to date; `--force` does not ask.

Also what Dagster cannot see: an evaluation run in quick mode is not a full one (the run's mode and
sample size must match the request).

The sources' current versions are recorded first (``record_source_versions``), as observations, so a
file edited since the last run makes its partitions stale here and in the UI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from ..core.project.source_versions import SourceVersions
from ..core.runs.run_tags import CODE_VERSION_TAG, DATA_VERSION_TAG, INPUT_POINTER_TAG
from .evaluation_runs import evaluation_config_of
from .partitions import CHUNK_CONFIG, PROFILE, chunk_config_partitions, profile_partitions

# The source assets (defs/ingestion/sources.py) and which of them each asset reads.
DOCUMENTS = dg.AssetKey("documents")
PROJECT_SETTINGS = dg.AssetKey("project_settings")
CHUNK_CONFIG_SETTINGS = dg.AssetKey("chunk_config_settings")
RETRIEVAL_PROFILE_SETTINGS = dg.AssetKey("retrieval_profile_settings")
CONFIGURED_SETUPS = dg.AssetKey("configured_setups")
LEADERBOARD_SETTINGS = dg.AssetKey("leaderboard_settings")
SOURCES = (
    DOCUMENTS,
    PROJECT_SETTINGS,
    CHUNK_CONFIG_SETTINGS,
    RETRIEVAL_PROFILE_SETTINGS,
    CONFIGURED_SETUPS,
    LEADERBOARD_SETTINGS,
)
READS_DOCUMENTS = [dg.AssetDep(DOCUMENTS)]
READS_PROJECT_SETTINGS = [dg.AssetDep(PROJECT_SETTINGS)]
# the summaries over every partition rank the configured setups and mark the removed ones
READS_SETUPS = [dg.AssetDep(CONFIGURED_SETUPS)]
# the leaderboard's objective: an edited one re-ranks the board
READS_LEADERBOARD_SETTINGS = [dg.AssetDep(LEADERBOARD_SETTINGS)]
READS_CHUNK_CONFIG = [dg.AssetDep(CHUNK_CONFIG_SETTINGS)]
# an evaluation partition reads its own profile's partition: Dagster infers that mapping, as it does for
# chunk configs (lib/partitions.py)
READS_PROFILE = [dg.AssetDep(RETRIEVAL_PROFILE_SETTINGS)]


def source_observations(versions: SourceVersions) -> list[tuple[dg.AssetKey, str | None, str]]:
    """(source, partition, version) for every source ``versions`` holds (None: not looked at)."""
    found: list[tuple[dg.AssetKey, str | None, str]] = []
    if versions.documents:
        found.append((DOCUMENTS, None, versions.documents))
    if versions.project_settings:
        found.append((PROJECT_SETTINGS, None, versions.project_settings))
    found += [(CHUNK_CONFIG_SETTINGS, name, v) for name, v in versions.chunk_configs.items()]
    found += [(RETRIEVAL_PROFILE_SETTINGS, name, v) for name, v in versions.profiles.items()]
    if versions.setups:
        found.append((CONFIGURED_SETUPS, None, versions.setups))
    if versions.leaderboard:
        found.append((LEADERBOARD_SETTINGS, None, versions.leaderboard))
    return found


def changed_source_observations(
    instance: dg.DagsterInstance, versions: SourceVersions
) -> list[dg.AssetObservation]:
    """An observation for each source whose version differs from the one last observed (a sensor
    returns them; ``record_source_versions`` reports them)."""
    changed = []
    for key, partition, version in source_observations(versions):
        if _version(instance, key, partition) != version:
            changed.append(dg.AssetObservation(key, partition=partition, tags={DATA_VERSION_TAG: version}))
    return changed


def record_source_versions(
    instance: dg.DagsterInstance, versions: SourceVersions
) -> list[dg.AssetObservation]:
    """Report the changed sources' versions to the instance (outside any run); returns them."""
    changed = changed_source_observations(instance, versions)
    for observation in changed:
        instance.report_runless_asset_event(observation)
    return changed


def stale_assets(
    instance: dg.DagsterInstance,
    defs: dg.Definitions,
    assets: Sequence[str],
    partition_key: str | dg.MultiPartitionKey | None,
    run_config: Mapping[str, Any] | None = None,
    newest: NewestRecords | None = None,
) -> dict[str, str]:
    """The assets of ``assets`` (a run's, upstream first) that are out of date for this partition, each
    with its reason; an asset downstream of one that runs runs too. ``run_config``: what the run will
    be asked (an evaluation run's quick or full mode), compared with the config of the run that
    materialized each asset."""
    graph = defs.resolve_asset_graph()
    wanted = evaluation_config_of(run_config) if run_config is not None else None
    stale: dict[str, str] = {}
    run_configs: dict[str, dict[str, Any] | None] = {}
    newest = newest if newest is not None else NewestRecords(instance, graph)
    for name in assets:
        key = dg.AssetKey(name)
        node = graph.get(key)
        upstream = next((p.to_user_string() for p in node.parent_keys if p.to_user_string() in stale), None)
        if upstream is not None:
            stale[name] = f"{upstream} runs first"
            continue
        reason = _staleness(
            instance,
            graph,
            key,
            node,
            input_partition(node.partitions_def, partition_key),
            wanted,
            run_configs,
            newest,
        )
        if reason:
            stale[name] = reason
    return stale


def _staleness(
    instance: dg.DagsterInstance,
    graph: Any,
    key: dg.AssetKey,
    node: Any,
    partition: str | None,
    wanted: Mapping[str, Any] | None,
    run_configs: dict[str, dict[str, Any] | None],
    newest: NewestRecords,
) -> str:
    record = instance.get_latest_data_version_record(key, False, partition_key=partition)
    if record is None or record.asset_materialization is None:
        return "never materialized"
    tags = record.asset_materialization.tags or {}
    code_version = node.code_version
    if code_version and tags.get(CODE_VERSION_TAG) != code_version:
        return "new code version"
    if wanted is not None:
        if record.run_id not in run_configs:  # the assets of a run share it
            run = instance.get_run_by_id(record.run_id)
            run_configs[record.run_id] = evaluation_config_of(run.run_config) if run is not None else None
        done = run_configs[record.run_id]
        if done is not None and done != wanted:
            return f"last materialized with another evaluation mode ({done['mode']})"
    for parent in sorted(node.parent_keys):
        parent_node = graph.get(parent)
        pointer = tags.get(INPUT_POINTER_TAG + parent.to_user_string())
        parent_partition = input_partition(parent_node.partitions_def, partition)
        source = bool(parent_node.is_external)  # observed, never materialized: one query, not two
        # the input's record the materialization read; None: not read, or "NULL" (none when it ran)
        read_at = int(pointer) if pointer is not None and pointer.isdigit() else None
        since = read_at if read_at is not None else record.storage_id
        if parent_node.partitions_def is None or parent_partition is not None:
            newest_id = newest.get(parent, parent_partition)
            if newest_id is None or newest_id <= since:
                continue  # never recorded, or nothing of it recorded since it was read
        latest = instance.get_latest_data_version_record(
            parent, source, partition_key=parent_partition, after_cursor=since
        )
        if latest is None:
            continue
        if read_at is None:
            return f"{parent.to_user_string()} changed since"
        read = instance.get_latest_data_version_record(
            parent, source, partition_key=parent_partition, before_cursor=read_at + 1
        )
        if read is None or _tag(read) != _tag(latest):
            return f"{parent.to_user_string()} has a new data version"
    return ""


class NewestRecords:
    """The storage id of the newest materialization (of a source: observation) of each asset partition,
    one query per asset, kept until ``forget`` (call it after a run materialized something): most inputs
    then need no query per partition to show that nothing newer than what was read exists."""

    def __init__(self, instance: dg.DagsterInstance, graph: Any) -> None:
        self.instance, self.graph = instance, graph
        self._ids: dict[dg.AssetKey, Mapping[str, int]] = {}

    def forget(self) -> None:
        self._ids.clear()

    def get(self, key: dg.AssetKey, partition: str | None) -> int | None:
        if key not in self._ids:
            self._ids[key] = self._fetch(key)
        return self._ids[key].get(partition or "")

    def _fetch(self, key: dg.AssetKey) -> Mapping[str, int]:
        external = self.graph.get(key).is_external
        event = (
            dg.DagsterEventType.ASSET_OBSERVATION if external else dg.DagsterEventType.ASSET_MATERIALIZATION
        )
        if self.graph.get(key).partitions_def is not None:
            return self.instance.event_log_storage.get_latest_storage_id_by_partition(key, event)
        record = self.instance.get_latest_data_version_record(key, external)
        return {"": record.storage_id} if record is not None else {}


def _version(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None) -> str | None:
    record = instance.get_latest_data_version_record(key, True, partition_key=partition)
    return _tag(record) if record is not None else None


def _tag(record: dg.EventLogRecord) -> str | None:
    event = record.asset_event
    return (event.tags or {}).get(DATA_VERSION_TAG) if event is not None else None


def input_partition(
    partitions_def: dg.PartitionsDefinition | None, key: str | dg.MultiPartitionKey | None
) -> str | None:
    """The partition of an asset (or input) with ``partitions_def`` that a run of partition ``key``
    reads or writes: the chunk config or profile of an evaluation key, the key itself, or none."""
    if partitions_def is None or key is None:
        return None
    if partitions_def in (chunk_config_partitions, profile_partitions):
        dimension = CHUNK_CONFIG if partitions_def is chunk_config_partitions else PROFILE
        if isinstance(key, dg.MultiPartitionKey):
            return key.keys_by_dimension[dimension]
        if "|" in key:
            config, profile = key.split("|", 1)
            return config if dimension == CHUNK_CONFIG else profile
        return key if dimension == CHUNK_CONFIG else None
    return str(key)
