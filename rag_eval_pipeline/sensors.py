"""Keeps the dynamic partitions in step with the config files users edit under data/."""

import hashlib
from dataclasses import dataclass

import dagster as dg

from .core.configs import PipelineConfigs
from .partitions import CHUNK_CONFIG, PROFILE
from .resources import ProjectResource


@dataclass(frozen=True)
class PartitionChanges:
    add_chunk_configs: list[str]
    add_profiles: list[str]
    removed_chunk_configs: list[str]
    removed_profiles: list[str]


def partition_changes(instance: dg.DagsterInstance, configs: PipelineConfigs) -> PartitionChanges:
    """What to add so every configured name is a partition; names no longer configured are reported
    (their partitions and history are kept, so past results stay readable)."""
    existing_configs = set(instance.get_dynamic_partitions(CHUNK_CONFIG))
    existing_profiles = set(instance.get_dynamic_partitions(PROFILE))
    config_names = [c.name for c in configs.chunk_configs]
    profile_names = [p.name for p in configs.profiles]
    return PartitionChanges(
        add_chunk_configs=[n for n in config_names if n not in existing_configs],
        add_profiles=[n for n in profile_names if n not in existing_profiles],
        removed_chunk_configs=sorted(existing_configs - set(config_names)),
        removed_profiles=sorted(existing_profiles - set(profile_names)),
    )


def sync_partitions(instance: dg.DagsterInstance, configs: PipelineConfigs) -> PartitionChanges:
    changes = partition_changes(instance, configs)
    if changes.add_chunk_configs:
        instance.add_dynamic_partitions(CHUNK_CONFIG, changes.add_chunk_configs)
    if changes.add_profiles:
        instance.add_dynamic_partitions(PROFILE, changes.add_profiles)
    return changes


def _files_state(project: ProjectResource) -> str:
    """The observed content of the config files (never the clock): a changed file changes the cursor."""
    digest = hashlib.sha256()
    for relative in (project.chunk_configs_file, project.profiles_file):
        path = project.path(relative)
        digest.update(
            relative.encode() + b"\0" + (path.read_bytes() if path.exists() else b"<missing>") + b"\0"
        )
    return digest.hexdigest()


@dg.sensor(minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING)
def partition_sync_sensor(context: dg.SensorEvaluationContext, project: ProjectResource) -> dg.SensorResult:
    """Adds a partition for every chunk config and profile in the files; says which were removed."""
    state = _files_state(project)
    configs = project.load_configs()  # an invalid file fails the tick with the file, key and remedy
    changes = partition_changes(context.instance, configs)
    if state == context.cursor and not (changes.add_chunk_configs or changes.add_profiles):
        return dg.SensorResult(skip_reason="config files unchanged", cursor=state)
    requests = []
    if changes.add_chunk_configs:
        requests.append(dg.AddDynamicPartitionsRequest(CHUNK_CONFIG, changes.add_chunk_configs))
    if changes.add_profiles:
        requests.append(dg.AddDynamicPartitionsRequest(PROFILE, changes.add_profiles))
    for kind, names in (
        ("chunk config", changes.removed_chunk_configs),
        ("profile", changes.removed_profiles),
    ):
        if names:
            context.log.warning(
                f"{kind}(s) {', '.join(names)} are no longer in the config files; their partitions and "
                f"history are kept"
            )
    return dg.SensorResult(dynamic_partitions_requests=requests, cursor=state)
