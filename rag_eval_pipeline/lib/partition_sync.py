"""Keeps the dynamic partitions in step with the config files: a partition for every configured chunk
config and profile. Used by partition_sync_sensor, `rag-eval run` and `rag-eval chunk-configs apply`."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from ..core.settings.configs import PipelineConfigs
from .partitions import CHUNK_CONFIG, PROFILE


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
