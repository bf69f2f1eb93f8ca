"""benchmarks/end_to_end.py on a tiny workspace (one chunk config, one profile), as its users run it:
every scenario and section runs and is printed, so the script cannot rot (no wall-clock figure is
asserted). benchmarks/ui_backfill.py's smoke run is in test_ui_backfill_benchmark.py: a file of its own,
so the two (minutes each) run on different workers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.conftest import write_tiny_project
from rag_eval_pipeline_tests.faults.entry_points import rag_eval_env

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

pytestmark = pytest.mark.slow


def one_by_one_data(root: Path) -> Path:
    """The tiny project's data/ with one chunk config and one profile: the cheapest evaluation."""
    data = write_tiny_project(root) / "data"
    (data / "chunk_configs.yaml").write_text(
        "chunk_configs:\n  - name: fixed-60-0\n    chunker: fixed\n    chunk_size: 60\n", encoding="utf-8"
    )
    (data / "retrieval_profiles.yaml").write_text(
        "profiles:\n  - name: top2\n    top_k: 2\n", encoding="utf-8"
    )
    return data


def benchmark(script: str, data: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--data", str(data), *args],
        env=rag_eval_env(data.parent),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_end_to_end_runs_every_scenario_and_the_dagster_overhead(tmp_path: Path) -> None:
    data = one_by_one_data(tmp_path / "tiny")
    text = benchmark("end_to_end.py", data, "--repeats", "1", "--overhead-repeats", "1")
    assert f"`rag-eval run` on {data} (3 documents, 1 chunk config(s) x 1 profile(s))" in text
    for scenario in ("cold", "warm", "edited", "profile"):
        assert re.search(rf"^{scenario} +wall +[0-9.]+ s \(in process", text, re.M), scenario
    assert "Summary: medians of 1 repeat(s)" in text
    assert re.search(r"^edited document +\d+ texts embedded: \d+ chunks of alpha/pumps\.md ", text, re.M)
    assert re.search(r"^profile added +\d+ texts embedded \(0 of them chunks\)", text, re.M)
    overhead = text[text.index("Dagster overhead of one evaluation partition (medians of 1") :]
    assert re.search(r"^direct asset calls +[0-9.]+ s", overhead, re.M)  # the assets called directly
    assert re.search(r"^evaluation_job run +[0-9.]+ s .*x direct", overhead, re.M)
    assert re.search(r"^events written +\d+ a run", overhead, re.M)
