"""What the pipeline reads from outside, as external assets: the documents, each chunk config, each
retrieval profile, the settings of questions and answers, which setups are configured and what the
leaderboard ranks them by. `rag-eval run`, the nightly schedule and the
sensors record their versions (core/source_versions.py) as observations (lib/freshness.py): a changed
source makes the partitions that read it stale in the UI, and they are what a run does not skip."""

import dagster as dg

from ...lib.freshness import (
    CHUNK_CONFIG_SETTINGS,
    CONFIGURED_SETUPS,
    DOCUMENTS,
    LEADERBOARD_SETTINGS,
    PROJECT_SETTINGS,
    RETRIEVAL_PROFILE_SETTINGS,
)
from ...lib.partitions import chunk_config_partitions, profile_partitions

SOURCE_ASSETS = [
    dg.AssetSpec(DOCUMENTS, group_name="ingestion", description="The files of the corpus folder."),
    dg.AssetSpec(
        PROJECT_SETTINGS,
        group_name="ingestion",
        description="data/generation.yaml, data/answer_evaluation.yaml and the golden dataset.",
    ),
    dg.AssetSpec(
        CHUNK_CONFIG_SETTINGS,
        group_name="ingestion",
        partitions_def=chunk_config_partitions,
        description="Each chunk config of data/chunk_configs.yaml.",
    ),
    dg.AssetSpec(
        RETRIEVAL_PROFILE_SETTINGS,
        group_name="ingestion",
        partitions_def=profile_partitions,
        description="Each retrieval profile of data/retrieval_profiles.yaml.",
    ),
    dg.AssetSpec(
        CONFIGURED_SETUPS,
        group_name="ingestion",
        description="Which chunk configs and profiles the files name: what the leaderboard ranks.",
    ),
    dg.AssetSpec(
        LEADERBOARD_SETTINGS,
        group_name="ingestion",
        description="The leaderboard's objective: the leaderboard section of data/monitoring.yaml.",
    ),
]
