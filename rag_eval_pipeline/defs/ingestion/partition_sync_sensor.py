"""Keeps the dynamic partitions in step with the config files users edit under data/ (the user's inputs,
like the corpus), and re-runs the partitions of a config whose settings changed."""

import json
from dataclasses import dataclass, replace

import dagster as dg

from ...core.project.source_versions import (
    SourceVersions,
    config_versions,
    leaderboard_settings_version,
    project_settings_version,
    setups_version,
)
from ...core.runs.run_tags import REASON_TAG
from ...core.settings.configs import PipelineConfigs
from ...lib.freshness import changed_source_observations
from ...lib.partition_sync import partition_changes
from ...lib.partitions import CHUNK_CONFIG, PROFILE, chunk_config_partitions, profile_partitions
from ...lib.resources import ProjectResource
from ..jobs import chunking_job, evaluation_job


@dataclass(frozen=True)
class ConfigState:
    """The observed settings (never the clock): each chunk config's and profile's hash, by name."""

    chunk_configs: dict[str, str]
    profiles: dict[str, str]
    # how many ticks requested re-runs: in the run keys, so A -> B -> A -> B runs every time
    requests: int = 0

    @staticmethod
    def of(configs: PipelineConfigs, requests: int = 0) -> "ConfigState":
        return ConfigState(
            {c.name: c.config_hash for c in configs.chunk_configs},
            {p.name: p.config_hash for p in configs.profiles},
            requests,
        )

    def to_cursor(self) -> str:
        return json.dumps(
            {"chunk_configs": self.chunk_configs, "profiles": self.profiles, "requests": self.requests},
            sort_keys=True,
        )

    @staticmethod
    def from_cursor(cursor: str | None) -> "ConfigState | None":
        """None for no cursor, or one from before the cursor held per-config hashes."""
        try:
            raw = json.loads(cursor) if cursor else None
        except json.JSONDecodeError:
            return None
        if not isinstance(raw, dict):
            return None
        return ConfigState(
            dict(raw.get("chunk_configs", {})), dict(raw.get("profiles", {})), int(raw.get("requests", 0))
        )

    def changed_since(self, before: "ConfigState") -> tuple[list[str], list[str]]:
        """Names whose settings changed (same name, other hash); added names are new partitions."""
        return (
            sorted(n for n, h in self.chunk_configs.items() if before.chunk_configs.get(n, h) != h),
            sorted(n for n, h in self.profiles.items() if before.profiles.get(n, h) != h),
        )


def rerun_requests(
    state: ConfigState, before: ConfigState, changed_configs: list[str], changed_profiles: list[str]
) -> list[dg.RunRequest]:
    """A changed chunk config is re-chunked (its evaluation partitions then follow by automation); a
    changed profile re-evaluates its partitions on the chunk configs that were there before (a config
    added in the same tick is evaluated by automation). Run keys carry the new hash and the request
    number: Dagster deduplicates run keys forever, and editing a setting back and forth must run again."""
    suffix = f"{state.requests}"
    requests = [
        dg.RunRequest(
            run_key=f"chunk-config-{name}-{state.chunk_configs[name][:16]}-{suffix}",
            job_name=chunking_job.name,
            partition_key=name,
            tags={REASON_TAG: f"chunk config {name} changed"},
        )
        for name in changed_configs
    ]
    for profile in changed_profiles:
        for config in sorted(set(state.chunk_configs) & set(before.chunk_configs) - set(changed_configs)):
            key = dg.MultiPartitionKey({CHUNK_CONFIG: config, PROFILE: profile})
            requests.append(
                dg.RunRequest(
                    run_key=f"profile-{config}|{profile}-{state.profiles[profile][:16]}-{suffix}",
                    job_name=evaluation_job.name,
                    partition_key=key,
                    tags={REASON_TAG: f"profile {profile} changed"},
                )
            )
    return requests


# What each re-run makes, and the metadata entry that records the settings it was made with.
_SETTINGS_RECORD = {
    chunking_job.name: ("chunks", "chunk_config_hash"),
    evaluation_job.name: ("retrieval_results", "profile_hash"),
}


def made_with_these_settings(
    instance: dg.DagsterInstance, request: dg.RunRequest, state: ConfigState
) -> bool:
    """The latest materialization of the request's partition already records the new hash."""
    asset, entry = _SETTINGS_RECORD[str(request.job_name)]
    key = request.partition_key
    if isinstance(key, dg.MultiPartitionKey):
        wanted = state.profiles[key.keys_by_dimension[PROFILE]]
    else:
        wanted = state.chunk_configs[str(key)]
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[str(key)]), limit=1
    ).records
    materialization = records[0].asset_materialization if records else None
    recorded = materialization.metadata.get(entry) if materialization is not None else None
    return recorded is not None and recorded.value == wanted


@dg.sensor(
    jobs=[chunking_job, evaluation_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def partition_sync_sensor(context: dg.SensorEvaluationContext, project: ProjectResource) -> dg.SensorResult:
    """Adds a partition for every chunk config and profile in the files (automation then evaluates the
    new partitions and nothing else); re-runs the partitions of a config or profile whose settings
    changed; says which were removed (their partitions and history are kept)."""
    configs = project.load_configs()  # an invalid file fails the tick with the file, key and remedy
    before = ConfigState.from_cursor(context.cursor)
    state = ConfigState.of(configs, before.requests if before else 0)
    changes = partition_changes(context.instance, configs)
    changed_configs, changed_profiles = state.changed_since(before) if before else ([], [])
    # the settings' versions, so the UI shows which partitions an edit made stale (lib/freshness.py)
    chunk_config_versions, profile_versions = config_versions(configs, project.files())
    observed = changed_source_observations(
        context.instance,
        SourceVersions(
            None,
            project_settings_version(project.files()),
            chunk_config_versions,
            profile_versions,
            setups_version(configs),
            leaderboard_settings_version(project.files()),
        ),
    )
    if before == state and not (changes.add_chunk_configs or changes.add_profiles):
        return dg.SensorResult(
            skip_reason="config files unchanged", asset_events=observed, cursor=state.to_cursor()
        )
    requests = []
    if changes.add_chunk_configs:
        requests.append(chunk_config_partitions.build_add_request(changes.add_chunk_configs))
    if changes.add_profiles:
        requests.append(profile_partitions.build_add_request(changes.add_profiles))
    for kind, names in (
        ("chunk config", changes.removed_chunk_configs),
        ("profile", changes.removed_profiles),
    ):
        if names:
            context.log.warning(
                f"{kind}(s) {', '.join(names)} are no longer in the config files; their partitions and "
                f"history are kept"
            )
    for kind, names in (("chunk config", changed_configs), ("profile", changed_profiles)):
        if names:
            context.log.info(f"{kind}(s) {', '.join(names)} changed: re-evaluating their partitions")
    reruns = rerun_requests(state, before, changed_configs, changed_profiles) if before else []
    # a partition already made with the new settings (`rag-eval chunk-configs apply --run`, or a
    # `rag-eval run` after the edit) is not made again
    reruns = [r for r in reruns if not made_with_these_settings(context.instance, r, state)]
    if reruns:
        state = replace(state, requests=state.requests + 1)
    return dg.SensorResult(
        run_requests=reruns,
        dynamic_partitions_requests=requests,
        asset_events=observed,
        cursor=state.to_cursor(),
    )
