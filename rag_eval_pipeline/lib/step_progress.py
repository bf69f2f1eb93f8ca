"""A step's progress: lines with counts and rates in the run log, and a terminal bar when `rag-eval run`
executes the step in its own process and asks for one (core/progress.py)."""

from __future__ import annotations

import dagster as dg

from ..core.progress import Progress, step_progress


def progress_for(context: dg.AssetExecutionContext) -> Progress:
    """Lines with counts and rates in the run log; also a terminal bar when `rag-eval run` asks for one."""
    return step_progress(context.log.info)
