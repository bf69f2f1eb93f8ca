"""benchmarks/search.py on the first 60 questions of the real data, a small space and a cheap embedder:
every figure it promises is printed, and the search's best is in the full grid's tier 1."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.fakes import HashingEmbedder

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "search.py"
SPACE = """\
chunking: {chunker: [fixed], chunk_size: [100, 400], overlap: [0], length: characters}
retrieval: {top_k: [1, 5], keyword_weight: [0, 1]}
racing: {first_sample: 10, growth: 2.0}
"""


@pytest.mark.slow
def test_the_benchmark_compares_the_search_with_the_full_grid(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("search_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    space = tmp_path / "search.yaml"
    space.write_text(SPACE, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = module.main(
            ["--space", str(space), "--limit-questions", "60", "--work", str(tmp_path / "work")],
            embedder=HashingEmbedder(),
        )
    text = out.getvalue()
    assert code == 0, text
    assert "8 candidates" in text and "60 questions" in text
    assert re.search(r"full grid: 8 candidates x 60 questions in \d", text)
    assert re.search(r"queries 480\b", text)  # the grid asks every candidate every question
    best = re.search(r"  best: (\S+) [0-9.]+ \(full grid [0-9.]+; .*\); in the full grid's tier 1: yes", text)
    assert best is not None, text
    assert re.search(r"chunk texts indexed [0-9,]+ \(\d+% of the grid's\)", text)
    assert "the least a search confirming its winning tier" in text
    assert "eliminated though in the full grid's tier 1: none" in text
