"""`python -m rag_eval_pipeline run`, the README's main command, as a user runs it."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow


def rag_eval(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "QDRANT_URL")}
    env["RAG_EVAL_PROJECT_DIR"] = str(project)
    return subprocess.run(
        [sys.executable, "-m", "rag_eval_pipeline", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_run_prints_the_leaderboard_and_stores_everything_in_the_project(tiny_project: Path):
    done = rag_eval(tiny_project, "run", "--profiles", "top2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].split()[:5] == ["rank", "chunk_config", "profile", "k", "span_recall"]
    assert {line.split()[1] for line in lines[2:]} == {"fixed-60-0", "recursive-120-20"}
    assert (tiny_project / ".dagster" / "storage").is_dir()  # the project's dagster.yaml instance
    assert (tiny_project / "data/cache/embeddings.sqlite").is_file()
    board = pd.read_parquet(tiny_project / "data/warehouse/current/leaderboard.parquet")
    assert len(board) == 2

    again = rag_eval(tiny_project, "leaderboard")
    assert again.returncode == 0 and again.stdout == done.stdout


def test_bad_selection_and_bad_config_exit_2_with_the_reason(tiny_project: Path):
    done = rag_eval(tiny_project, "run", "--chunk-configs", "nope")
    assert done.returncode == 2
    assert "unknown chunk config(s) nope" in done.stderr
    (tiny_project / "data/chunk_configs.yaml").write_text(
        "chunk_configs:\n  - {name: x, chunker: fixed, chunk_size: 10, chunk_overlap: 10}\n"
    )
    done = rag_eval(tiny_project, "run")
    assert done.returncode == 2 and "chunk_overlap (10) must be smaller than chunk_size (10)" in done.stderr
