"""A step's progress: lines with counts and rates in the run log, and a terminal bar when `rag-eval run`
executes the step in its own process and asks for one (core/progress.py)."""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from ..core.progress import Progress, say_on_terminal, step_progress


def progress_for(context: dg.AssetExecutionContext) -> Progress:
    """Lines with counts and rates in the run log; also a terminal bar when `rag-eval run` asks for one."""
    return step_progress(context.log.info)


def announce_for(context: dg.AssetExecutionContext) -> Callable[[str], None]:
    """What a step says before a long stage (an embedding estimated over a minute, core/project/
    workload.py): a warning in the run log, which `rag-eval run` lists after the run and the UI shows,
    and a line on the terminal at once when `rag-eval run` draws progress bars."""

    step = context.asset_key.to_user_string()
    if context.has_partition_key:
        step += f"[{context.partition_key}]"

    def announce(message: str) -> None:
        context.log.warning(message)
        say_on_terminal(f"{step}: {message}")

    return announce
