"""benchmarks/chroma_general.py on a tiny slice of the real data, with a cheap deterministic embedder."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.progress import no_progress
from rag_eval_pipeline_tests.fakes import HashingEmbedder

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "chroma_general.py"

CONFIGS_YAML = """\
chunk_configs:
  - name: recursive-800-100
    chunker: recursive
    chunk_size: 800
    chunk_overlap: 100
  - name: fixed-50-0
    chunker: fixed
    chunk_size: 50
"""


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chroma_general_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


bench = _load_script()


def _metric_line(report: str, name: str) -> list[tuple[float, float, float]]:
    pattern = rf"^{name}\s+([0-9.]+)\s+\[([0-9.]+), ([0-9.]+)\]$"
    return [tuple(map(float, m.groups())) for m in re.finditer(pattern, report, re.MULTILINE)]  # type: ignore[misc]


def test_tiny_slice_reports_every_metric_with_recall_in_range(tmp_path: Path) -> None:
    configs = tmp_path / "chunk_configs.yaml"
    configs.write_text(CONFIGS_YAML, encoding="utf-8")
    out = io.StringIO()
    argv = ["--chunk-configs", str(configs), "--limit-questions", "10", "--only", "recursive-800-100"]
    assert bench.main(argv, embedder=HashingEmbedder(dimension=128), out=out, progress=no_progress) == 0
    report = out.getvalue()

    assert "== recursive-800-100" in report
    assert "fixed-50-0" not in report  # --only left it out
    assert "questions: 10 " in report
    for name in bench.REPORTED_METRICS:
        assert len(_metric_line(report, name)) == 1, name
    for name in ("span_recall", "recall_at_k"):
        ((mean, low, high),) = _metric_line(report, name)
        assert 0.0 <= low <= mean <= high <= 1.0
    for words in ("chunks/s", "passages/s", "warm/cold", "queries/s", "questions/s", "tracemalloc peak"):
        assert words in report
    assert "(0 embedded, " in report  # the warm pass is all cache hits
    assert "same top-5 set for 10/10 queries" in report  # Qdrant and exact numpy agree
    assert re.search(r"^Quality .*\n.*\n-+\nrecursive-800-100 ", report, re.MULTILINE)
    assert "total runtime" in report


def test_every_reference_of_the_real_data_loads() -> None:
    corpus, dataset = bench.load_benchmark(bench.DEFAULT_DATA)
    assert [d.doc_id for d in corpus] == ["chatlogs.md", "state_of_the_union.md", "wikitexts.md"]
    assert len(dataset) == 276
    assert sum(len(e.relevant_spans) for e in dataset) == 452
    assert dataset.examples[0].question_id == "chroma-001"
    assert dataset.examples[-1].question_id == "chroma-276"


def _write_data(root: Path, start: int, end: int, content: str) -> Path:
    (root / "corpora").mkdir(parents=True)
    (root / "corpora" / "notes.md").write_text("The pump runs at 1,450 rpm.\n", encoding="utf-8")
    refs = json.dumps([{"content": content, "start_index": start, "end_index": end}])
    question = '"How fast does the pump run?","' + refs.replace('"', '""') + '",notes\n'
    (root / "questions.csv").write_text("question,references,corpus_id\n" + question, encoding="utf-8")
    return root


def test_a_reference_that_does_not_match_its_text_fails_clearly(tmp_path: Path) -> None:
    good = _write_data(tmp_path / "good", 4, 8, "pump")
    _, dataset = bench.load_benchmark(good)
    assert dataset.examples[0].relevant_spans[0].text == "pump"

    bad = _write_data(tmp_path / "bad", 5, 9, "pump")
    expected = r"data row 1 \(chroma-001\), reference 0: notes.md\[5:9\] is 'ump ' but the CSV says 'pump'"
    with pytest.raises(DatasetError, match=expected):
        bench.load_benchmark(bad)
    assert bench.main(["--data", str(bad)], embedder=HashingEmbedder(), out=io.StringIO()) == 2


def test_unknown_only_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configs = tmp_path / "chunk_configs.yaml"
    configs.write_text(CONFIGS_YAML, encoding="utf-8")
    argv = ["--chunk-configs", str(configs), "--only", "nope"]
    assert bench.main(argv, embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert "unknown chunk config(s) nope" in capsys.readouterr().err


def test_numpy_top_k_is_exact_and_best_first() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((50, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    expected = np.argsort(-(matrix @ query))[:5]
    assert bench.numpy_top_k(matrix, query, 5).tolist() == expected.tolist()
    assert len(bench.numpy_top_k(matrix, query, 80)) == 50
