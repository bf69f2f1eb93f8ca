"""Partitions: one per chunk config, and chunk config x retrieval profile for the evaluation.

Both dimensions are dynamic and synced from the files under data/ by `partition_sync_sensor` (and by
`rag-eval run`), so adding a config adds partitions and recomputes nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import dagster as dg

CHUNK_CONFIG = "chunk_config"
PROFILE = "profile"


@dataclass(frozen=True)
class _Keys:
    ordered: tuple[str, ...]  # as the instance lists them (the order they were added)
    present: frozenset[str]


# The keys of each dynamic partitions definition as read once in the current run (``keys_fixed_per_run``),
# or None outside such a run.
_run_keys: ContextVar[dict[str, _Keys] | None] = ContextVar("rag_eval_run_keys", default=None)


@contextmanager
def keys_fixed_per_run() -> Iterator[None]:
    """Inside, the chunk config and profile partition keys are read from the instance once and then
    answered from memory. Dagster asks whether a dynamic key exists for every input and output of every
    step (about 160 lookups, one SQLite connection each, in one evaluation run); within one run of
    `rag-eval run` the keys do not change: the runner syncs them before it starts the run. Outside (the
    daemon, the webserver, a run worker), every lookup goes to the instance as before."""
    token = _run_keys.set({})
    try:
        yield
    finally:
        _run_keys.reset(token)


class RunScopedDynamicPartitions(dg.DynamicPartitionsDefinition):
    """A ``DynamicPartitionsDefinition`` whose lookups are answered once per run (``keys_fixed_per_run``)."""

    __slots__ = ()

    def _keys(self, store: Any) -> _Keys | None:
        known = _run_keys.get()
        if known is None or store is None:
            return None
        name = self._validated_name()
        if name not in known:
            ordered = tuple(store.get_dynamic_partitions(name))
            known[name] = _Keys(ordered, frozenset(ordered))
        return known[name]

    def has_partition_key(
        self,
        partition_key: str,
        current_time: datetime | None = None,
        dynamic_partitions_store: Any = None,
    ) -> bool:
        with dg.partition_loading_context(current_time, dynamic_partitions_store) as ctx:
            keys = self._keys(ctx.dynamic_partitions_store)
        if keys is None:
            return super().has_partition_key(partition_key, current_time, dynamic_partitions_store)
        return partition_key in keys.present

    def get_partition_keys(
        self, current_time: datetime | None = None, dynamic_partitions_store: Any = None
    ) -> Sequence[str]:
        with dg.partition_loading_context(current_time, dynamic_partitions_store) as ctx:
            keys = self._keys(ctx.dynamic_partitions_store)
        if keys is None:
            return super().get_partition_keys(current_time, dynamic_partitions_store)
        return list(keys.ordered)


chunk_config_partitions = RunScopedDynamicPartitions(name=CHUNK_CONFIG)
profile_partitions = RunScopedDynamicPartitions(name=PROFILE)
# A search's candidates while they race (defs/search/): added when a search starts, removed when one is
# eliminated, so the UI shows the race. Its own set: candidates are not chunk configs or profiles of the
# config files, so they never enter the evaluation's partitions (nor its cap on chunk configs).
SEARCH_CANDIDATE = "search_candidate"
search_candidate_partitions = dg.DynamicPartitionsDefinition(name=SEARCH_CANDIDATE)
# An evaluation partition reads its chunk config's partition of chunks and chunk_index: Dagster infers
# that mapping, as chunk_config_partitions is a dimension of this definition.
evaluation_partitions = dg.MultiPartitionsDefinition(
    {CHUNK_CONFIG: chunk_config_partitions, PROFILE: profile_partitions}
)


def evaluation_key(context: dg.AssetExecutionContext) -> tuple[str, str]:
    key = context.partition_key
    if not isinstance(key, dg.MultiPartitionKey):
        raise TypeError(f"expected a chunk_config x profile partition key, got {key!r}")
    return key.keys_by_dimension[CHUNK_CONFIG], key.keys_by_dimension[PROFILE]
