"""Partitions: one per chunk config, and chunk config x retrieval profile for the evaluation.

Both dimensions are dynamic and synced from the files under data/ by `partition_sync_sensor` (and by
`rag-eval run`), so adding a config adds partitions and recomputes nothing else.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import dagster as dg

CHUNK_CONFIG = "chunk_config"
PROFILE = "profile"

chunk_config_partitions = dg.DynamicPartitionsDefinition(name=CHUNK_CONFIG)
profile_partitions = dg.DynamicPartitionsDefinition(name=PROFILE)
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


def evaluation_check(
    asset: dg.AssetsDefinition, name: str, description: str
) -> Callable[[Callable[..., dg.AssetCheckResult]], dg.AssetChecksDefinition]:
    """An asset check on an evaluation asset with a verdict per partition, as the UI and the GraphQL API
    (``assetCheckExecutions { evaluation { partition } }``) show it. Partitioned checks are a Dagster
    preview feature, chosen for that verdict: its PreviewWarning, that one alone, is acknowledged here
    instead of being printed at every load (a deprecation or any other warning still shows)."""

    def decorate(check: Callable[..., dg.AssetCheckResult]) -> dg.AssetChecksDefinition:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", "Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
            )
            return dg.asset_check(
                asset=asset, name=name, description=description, partitions_def=evaluation_partitions
            )(check)

    return decorate


def evaluation_key(context: dg.AssetExecutionContext) -> tuple[str, str]:
    key = context.partition_key
    if not isinstance(key, dg.MultiPartitionKey):
        raise TypeError(f"expected a chunk_config x profile partition key, got {key!r}")
    return key.keys_by_dimension[CHUNK_CONFIG], key.keys_by_dimension[PROFILE]
