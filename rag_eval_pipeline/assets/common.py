"""What every asset needs: config lookup with clear failures, progress to the run log, provenance."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pandas as pd

from ..core.configs import ChunkConfig, RetrievalProfile
from ..core.errors import InputError
from ..core.progress import LogProgress, Progress, TqdmProgress, fan_out
from ..resources import ProjectResource

PROGRESS_BAR_ENV = "RAG_EVAL_PROGRESS_BAR"


def progress_for(context: dg.AssetExecutionContext) -> Progress:
    """Lines with counts and rates in the run log; also a terminal bar when `rag-eval run` asks for one."""
    log_progress = LogProgress(context.log.info)
    if os.environ.get(PROGRESS_BAR_ENV) == "1":
        return fan_out(log_progress, TqdmProgress())
    return log_progress


@contextmanager
def input_errors_fail_the_step(prefix: str = "") -> Iterator[None]:
    """Bad user input fails the step with its message (file, key, remedy) instead of a traceback."""
    try:
        yield
    except InputError as exc:
        raise dg.Failure(f"{prefix}{exc}") from exc


def chunk_config_for(project: ProjectResource, name: str) -> ChunkConfig:
    with input_errors_fail_the_step():
        return project.load_configs().chunk_config(name)


def profile_for(project: ProjectResource, name: str) -> RetrievalProfile:
    with input_errors_fail_the_step():
        return project.load_configs().profile(name)


def now_utc() -> datetime:
    return datetime.now(UTC)


def with_columns(frame: pd.DataFrame, **columns: Any) -> pd.DataFrame:
    """Provenance first (run id, partition, hashes), then the data columns."""
    front = pd.DataFrame({name: [value] * len(frame) for name, value in columns.items()}, index=frame.index)
    return pd.concat([front, frame], axis=1)
