"""benchmarks/scale_out.py on the tiny project's cheapest evaluation (one chunk config, one profile), in
process and on one Dask worker, as its users run it: every figure and the model are printed and the
leaderboards are equal (no wall-clock figure is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.test_end_to_end_benchmark import benchmark, one_by_one_data

pytestmark = pytest.mark.slow


def test_scale_out_measures_in_process_and_on_a_worker_and_models_n_workers(tmp_path: Path) -> None:
    out = benchmark(
        "scale_out.py", one_by_one_data(tmp_path / "project"), "--workers", "1", "--models", "1,4"
    )
    assert "in process" in out and "1 worker" in out
    assert "per-step overhead of a worker:" in out and "model (not a measurement)" in out
    summary = json.loads(out.rsplit("summary json: ", 1)[1])
    assert summary["boards_equal"] is True
    [in_process, one] = summary["scenarios"]
    assert in_process["workers"] == 0 and one["workers"] == 1 and one["same_board"] is True
    assert in_process["steps"] == one["steps"] > 0 and one["cpu_s"] > 0
    assert set(summary["model_wall_s"]) == {"1", "4"}
