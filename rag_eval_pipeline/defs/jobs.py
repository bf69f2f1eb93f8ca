"""One job per partitioning (a job cannot mix partition definitions; each infers its own from its
assets): together they are the main job."""

from __future__ import annotations

import dagster as dg

ingestion_job = dg.define_asset_job(
    "ingestion_job", selection=dg.AssetSelection.groups("ingestion"), executor_def=dg.in_process_executor
)
chunking_job = dg.define_asset_job(
    "chunking_job",
    selection=dg.AssetSelection.groups("chunking"),
    executor_def=dg.in_process_executor,
)
evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=dg.AssetSelection.groups("evaluation"),
    executor_def=dg.in_process_executor,
)
leaderboard_job = dg.define_asset_job(
    "leaderboard_job", selection=dg.AssetSelection.groups("reporting"), executor_def=dg.in_process_executor
)
