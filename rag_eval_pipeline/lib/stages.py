"""The assets each stage's job materializes, upstream first: defs/jobs.py builds the jobs from them, and
lib/freshness.py checks them in this order."""

from __future__ import annotations

JOB_ASSETS: dict[str, tuple[str, ...]] = {
    # unpartitioned: what every chunk config and profile reads
    "ingestion_job": ("corpus", "synthetic_questions", "eval_questions", "answer_calibration"),
    # per chunk config
    "chunking_job": ("chunks", "chunk_index", "chunk_level_questions"),
    # per chunk config x profile, with the regression checks of its metrics
    "evaluation_job": (
        "retrieval_results",
        "retrieval_metrics",
        "answers",
        "answer_metrics",
        "retrieval_diagnostics",
    ),
    # unpartitioned: the summaries over every partition (the leaderboard's report shows the health)
    "leaderboard_job": ("answer_judgements", "question_set_health", "leaderboard"),
}
