"""benchmarks/ui_backfill.py on a tiny workspace (one chunk config, one profile), as its users run it:
every variant (the CLI, the UI's backfills, `rag-eval run --launch`) runs and is printed, so the script
cannot rot (no wall-clock figure is asserted). The webserver submits the backfills' runs itself
(``--synchronous-backfills``): the backfill daemon's wait (0-30 s a backfill, two backfills) is no part of
what the smoke run checks; runner/test_launch.py runs a backfill through the daemon."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.test_end_to_end_benchmark import benchmark, one_by_one_data

pytestmark = pytest.mark.slow


def test_ui_backfill_runs_every_variant_through_the_ui_and_the_cli(tmp_path: Path) -> None:
    data = one_by_one_data(tmp_path / "tiny")
    text = benchmark("ui_backfill.py", data, "--repeats", "1", "--synchronous-backfills")
    assert "UI backfill benchmark: chunk config bench-ui-400-50 x 1 profile(s) (top2)" in text
    assert "backfills: submitted by the webserver at once (--synchronous-backfills" in text
    assert re.search(r"^setup: `rag-eval run` of bench-ui-400-50 .* [0-9.]+ s$", text, re.M)
    for variant in ("cli", "ui", "launch"):
        assert re.search(rf"^{variant} +wall +[0-9.]+ s \| +\d+ runs \| summed over runs: ", text, re.M)
    assert "Summary: medians of 1 repeat(s), interleaved" in text
    for variant in ("ui", "launch"):
        assert re.search(rf"^{variant} / cli [0-9.]+x \(goal <= 1.5x\)$", text, re.M), variant
