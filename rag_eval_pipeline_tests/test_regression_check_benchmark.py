"""benchmarks/regression_check.py on a tiny history: both stores choose the same baseline and read the
same rows, and the figures are printed (no wall-clock figure is asserted)."""

from __future__ import annotations

import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

from rag_eval_pipeline.core.store.warehouse import Warehouse

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "regression_check.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regression_check_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_prints_each_size_the_growth_ratios_and_the_own_history_line(tmp_path: Path) -> None:
    bench = _load_script()
    out = io.StringIO()
    medians = bench.run([6, 12], 3, 4, 1, 2, tmp_path, out)
    text = out.getvalue()
    assert text.startswith("machine: ") and " cores, Python " in text
    assert sorted(medians) == [6, 12] and set(medians[6]) == {"whole", "partition"}
    rows = re.findall(r"^ +(\d+) +(\d+) .* yes \(baseline (\S+), 4 rows\)$", text, re.MULTILINE)
    baseline = "checked-400-50.dense-top5.run-00001"  # the previous full run: one without evaluation columns
    assert rows == [("6", "2", baseline), ("12", "4", baseline)]
    assert re.search(r"^growth 12/6 files, whole store: +[0-9.]+x", text, re.MULTILINE)
    assert re.search(r"^growth 12/6 files, partition store: +[0-9.]+x", text, re.MULTILINE)
    assert "own history 3 -> 6 runs of the checked partition (15 files)" in text
    # written by the warehouse's writer, in its layout; the first runs predate the evaluation columns
    files = Warehouse(tmp_path).history_files("retrieval_metrics")
    assert len(files) == 15 and all("chunk_config=" in p.parent.parent.name for p in files)
    first = bench.run_rows(bench.CHECKED, 0, 4)
    assert "evaluation_id" not in first.columns and "evaluation_id" in bench.run_rows(bench.CHECKED, 2, 4)
