"""Partitions: one per chunk config, and chunk config x retrieval profile for the evaluation.

Both dimensions are dynamic and synced from the files under data/ by `partition_sync_sensor` (and by
`rag-eval run`), so adding a config adds partitions and recomputes nothing else.
"""

from __future__ import annotations

import dagster as dg

CHUNK_CONFIG = "chunk_config"
PROFILE = "profile"

chunk_config_partitions = dg.DynamicPartitionsDefinition(name=CHUNK_CONFIG)
profile_partitions = dg.DynamicPartitionsDefinition(name=PROFILE)
evaluation_partitions = dg.MultiPartitionsDefinition(
    {CHUNK_CONFIG: chunk_config_partitions, PROFILE: profile_partitions}
)
# evaluation partition -> its chunk config's partition of chunks / chunk_index
by_chunk_config = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=CHUNK_CONFIG)


def evaluation_key(context: dg.AssetExecutionContext) -> tuple[str, str]:
    key = context.partition_key
    if not isinstance(key, dg.MultiPartitionKey):
        raise TypeError(f"expected a chunk_config x profile partition key, got {key!r}")
    return key.keys_by_dimension[CHUNK_CONFIG], key.keys_by_dimension[PROFILE]
