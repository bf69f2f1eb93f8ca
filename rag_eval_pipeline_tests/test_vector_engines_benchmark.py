"""benchmarks/vector_engines.py on the tiny project with a cheap embedder: both engines write, update,
open and search the same chunks, and every line of the report is printed (no wall-clock figure is
asserted)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

from rag_eval_pipeline_tests.fakes import HashingEmbedder

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "vector_engines.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vector_engines_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_tiny_run_compares_both_engines_on_every_stage(tiny_project: Path) -> None:
    bench = _load_script()
    out = io.StringIO()
    argv = ["--data", str(tiny_project / "data"), "--chunk-config", "fixed-60-0", "--repeats", "1"]
    with contextlib.redirect_stdout(out):
        assert bench.main(argv, embedder=HashingEmbedder()) == 0
    text = out.getvalue()
    assert text.startswith("machine: ")
    assert re.search(
        r"^data: fixed-60-0, \d+ chunks of .*, 4 golden questions, test:hashing-bow 64 ", text, re.M
    )
    for stage in ("write", "unchanged", "one edited", "open", "query"):
        assert re.search(rf"^{stage} .* edge +[0-9.]+ ms  qdrant-local +[0-9.]+ ms", text, re.M), stage
    assert "points written by an update: unchanged edge 0, qdrant-local 0; one edited chunk edge 1," in text
    assert "same hits, edge vs qdrant-local: True" in text
    for k in (5, 10, 20):
        assert re.search(rf"^edge HNSW \(exact=False\) recall@{k} against exact search: [0-9.]+$", text, re.M)
