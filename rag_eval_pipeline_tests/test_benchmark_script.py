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
PROFILES_YAML = """\
profiles:
  - name: dense-top5
    top_k: 5
  - name: hybrid-top5
    top_k: 5
    vector_weight: 0.6
    keyword_weight: 0.4
  - name: keyword-top5
    top_k: 5
    vector_weight: 0
    keyword_weight: 1
  - name: reranked-top5
    top_k: 5
    reranker: models/no-such-cross-encoder
"""
PROFILE_NAMES = ("dense-top5", "hybrid-top5", "keyword-top5")
FIGURE = r"(?:[0-9][0-9,]*(?:\.[0-9]+)?|inf)"  # a rate as printed: 1,234 or 56.7


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


def _section(report: str, profile: str) -> str:
    """The per-profile block of the report, from its ``-- name:`` heading to the next blank line."""
    match = re.search(rf"^-- {profile}: .*?(?=^\n|\Z)", report, re.MULTILINE | re.DOTALL)
    assert match is not None, profile
    return match.group(0)


def _table_row(report: str, title: str, config: str, profile: str) -> list[str]:
    """The cells after ``config profile`` in the summary table whose title starts with ``title``."""
    table = report[report.index(f"\n{title}") :].split("\n\n", 1)[0]
    rows = [line.split()[2:] for line in table.splitlines() if line.split()[:2] == [config, profile]]
    assert len(rows) == 1, (title, profile)
    return rows[0]


def _write_configs(tmp_path: Path) -> list[str]:
    configs = tmp_path / "chunk_configs.yaml"
    configs.write_text(CONFIGS_YAML, encoding="utf-8")
    profiles = tmp_path / "retrieval_profiles.yaml"
    profiles.write_text(PROFILES_YAML, encoding="utf-8")
    return ["--chunk-configs", str(configs), "--profiles", str(profiles)]


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One run on 10 questions and one chunk config, shared by the tests that read its report."""
    argv = [*_write_configs(tmp_path_factory.mktemp("bench")), "--limit-questions", "10", "--only"]
    out = io.StringIO()
    code = bench.main(
        [*argv, "recursive-800-100"], embedder=HashingEmbedder(dimension=128), out=out, progress=no_progress
    )
    assert code == 0
    return out.getvalue()


def test_tiny_slice_reports_every_metric_per_profile(tiny_report: str) -> None:
    report = tiny_report
    assert "== recursive-800-100" in report
    assert "fixed-50-0" not in report  # --only left it out
    assert "questions: 10 " in report
    for name in bench.REPORTED_METRICS:
        assert len(_metric_line(report, name)) == len(PROFILE_NAMES), name
    for profile in PROFILE_NAMES:
        section = _section(report, profile)
        assert "identical hits in every pass" in section
        for name in ("span_recall", "recall_at_k"):
            ((mean, low, high),) = _metric_line(section, name)
            assert 0.0 <= low <= mean <= high <= 1.0
    for words in ("chunks/s", "passages/s", "warm/cold", "questions/s", "tracemalloc peak", "BM25: "):
        assert words in report
    assert "(0 embedded, " in report  # the warm pass is all cache hits
    assert "same top-5 set as numpy for 10/10 queries" in _section(report, "dense-top5")
    for profile in ("hybrid-top5", "keyword-top5"):  # compared question by question with dense-top5
        cells = _table_row(report, "Paired differences against dense-top5", "recursive-800-100", profile)
        assert len(cells) == 3 * len(bench.PAIRED_METRICS)  # mean, [low, high] per metric
    assert "checks: identical hits in all 3 passes of all 3 (config, profile) runs; knn agrees" in report
    assert "total runtime" in report


def test_a_profile_that_needs_a_reranker_is_skipped_with_a_note(tiny_report: str) -> None:
    assert "reranked-top5: skipped, needs a reranker (models/no-such-cross-encoder)" in tiny_report
    assert "-- reranked-top5" not in tiny_report
    assert "reranked-top5" not in tiny_report.split("\nQuality", 1)[1]


def test_hybrid_profile_reports_knn_bm25_and_fusion_rates(tiny_report: str) -> None:
    section = _section(tiny_report, "hybrid-top5")
    for stage in ("knn", "bm25", "fusion"):
        assert re.search(rf"^\s+{stage}\s+[0-9.]+ s: {FIGURE} queries/s", section, re.MULTILINE), stage
    assert "knn hits within numpy's top-20 for 10/10 queries" in section
    found = re.search(r"found by\s+50 final hits: knn only (\d+) .*bm25 only (\d+) .*both (\d+) ", section)
    assert found is not None and sum(map(int, found.groups())) == 50

    e2e, knn, bm25, fuse, numpy_rate, numpy_knn, numpy_bm25, fuse_knn, shares = _table_row(
        tiny_report, "Retrieval speed", "recursive-800-100", "hybrid-top5"
    )
    for cell in (e2e, knn, bm25, fuse, numpy_rate):
        assert re.fullmatch(FIGURE, cell), cell
    for cell in (numpy_knn, numpy_bm25):
        assert re.fullmatch(rf"{FIGURE}x", cell), cell
    assert re.fullmatch(r"[0-9.]+%", fuse_knn)
    assert sum(map(int, shares.split("/"))) in (99, 100, 101)  # rounded percentages

    dense = _table_row(tiny_report, "Retrieval speed", "recursive-800-100", "dense-top5")
    keyword = _table_row(tiny_report, "Retrieval speed", "recursive-800-100", "keyword-top5")
    assert dense[2] == dense[3] == "-"  # no bm25, no fusion
    assert keyword[1] == keyword[3] == "-"  # no knn, no fusion


def test_keyword_and_dense_profiles_give_different_results(tiny_report: str) -> None:
    """Fails when the profiles are ignored and every one runs the same retrieval."""
    quality = {
        profile: _table_row(tiny_report, "Quality", "recursive-800-100", profile) for profile in PROFILE_NAMES
    }
    assert quality["keyword-top5"] != quality["dense-top5"]
    keyword_section = _section(tiny_report, "keyword-top5")
    assert "knn " not in keyword_section  # a keyword-only profile never touches Qdrant
    assert _metric_line(keyword_section, "mrr") != _metric_line(_section(tiny_report, "dense-top5"), "mrr")


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


def test_unknown_names_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _write_configs(tmp_path)
    assert bench.main([*argv, "--only", "nope"], embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert "unknown chunk config(s) nope" in capsys.readouterr().err
    assert bench.main([*argv, "--only-profiles", "nope"], embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert "--only-profiles: unknown profile(s) nope" in capsys.readouterr().err


def test_only_profiles_that_need_a_reranker_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*_write_configs(tmp_path), "--only-profiles", "reranked-top5"]
    assert bench.main(argv, embedder=HashingEmbedder(), out=io.StringIO()) == 2
    assert "every selected profile needs a reranker or an LLM" in capsys.readouterr().err


def test_numpy_top_k_is_exact_and_best_first() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((50, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    expected = np.argsort(-(matrix @ query))[:5]
    assert bench.numpy_top_k(matrix, query, 5).tolist() == expected.tolist()
    assert len(bench.numpy_top_k(matrix, query, 80)) == 50
