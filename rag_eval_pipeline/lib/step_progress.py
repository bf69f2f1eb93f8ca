"""A step's progress: lines with counts and rates in the run log, and a terminal bar when `rag-eval run`
executes the step in its own process and asks for one."""

from __future__ import annotations

import os

import dagster as dg

from ..core.progress import LogProgress, Progress, TqdmProgress, fan_out

PROGRESS_BAR_ENV = "RAG_EVAL_PROGRESS_BAR"


def progress_for(context: dg.AssetExecutionContext) -> Progress:
    """Lines with counts and rates in the run log; also a terminal bar when `rag-eval run` asks for one."""
    log_progress = LogProgress(context.log.info)
    if os.environ.get(PROGRESS_BAR_ENV) == "1":
        return fan_out(log_progress, TqdmProgress())
    return log_progress
