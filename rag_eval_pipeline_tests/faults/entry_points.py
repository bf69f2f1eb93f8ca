"""The public entry points the fault tests drive: `rag-eval` as a user runs it (a subprocess on a project
folder), and `dg.materialize` / the main job on a test instance with the tiny project's resources."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from rag_eval_pipeline_tests import forked_cli

# Variables of the developer's shell that would point a run at another instance, LLM or server.
_OUTSIDE = (
    "DAGSTER_HOME",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "QDRANT_URL",
    "QDRANT_API_KEY",
    "LANGSMITH_API_KEY",
    "LANGSMITH_ENDPOINT",
    "RAG_EVAL_WAREHOUSE_DIR",
    "RAG_EVAL_GOLDEN_DATASET",
    "RAG_EVAL_DASK_SCHEDULER",  # a cluster of the developer's: a test sets its own where it wants one
)


def rag_eval_env(project: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _OUTSIDE}
    env["RAG_EVAL_PROJECT_DIR"] = str(project)
    env.update(extra or {})
    return env


def rag_eval_command(*args: str) -> list[str]:
    return forked_cli.command(*args)


def rag_eval(
    project: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`rag-eval ARGS` on ``project`` (RAG_EVAL_PROJECT_DIR), with ``env`` added to a clean environment:
    a process of its own, forked from one that has imported the package (forked_cli.py)."""
    return forked_cli.run(args, rag_eval_env(project, env), timeout=timeout)
