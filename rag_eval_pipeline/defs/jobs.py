"""One job per partitioning (a job cannot mix partition definitions; each infers its own from its
assets): together they are the main job. Each names its assets, as they cross the stage folders (and
the UI's groups): the ingestion run also makes the questions and the answer calibration, the chunking
run the chunk-level questions, the evaluation run the answers and their metrics, the leaderboard run
the judgements and the question set's health (which the leaderboard's report shows). Their steps run in
the run's process, or on Dask workers when configured (lib/executor.py)."""

from __future__ import annotations

import dagster as dg

from ..lib.executor import rag_eval_executor
from ..lib.stages import JOB_ASSETS

# unpartitioned: what every chunk config and profile reads
ingestion_job = dg.define_asset_job(
    "ingestion_job",
    selection=list(JOB_ASSETS["ingestion_job"]),
    executor_def=rag_eval_executor,
)
# per chunk config
chunking_job = dg.define_asset_job(
    "chunking_job",
    selection=list(JOB_ASSETS["chunking_job"]),
    executor_def=rag_eval_executor,
)
# per chunk config x profile, with the regression checks of its metrics
evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=list(JOB_ASSETS["evaluation_job"]),
    executor_def=rag_eval_executor,
)
# unpartitioned: the summaries over every partition
leaderboard_job = dg.define_asset_job(
    "leaderboard_job",
    selection=list(JOB_ASSETS["leaderboard_job"]),
    executor_def=rag_eval_executor,
)
