"""benchmarks/end_to_end.py on a tiny workspace (one chunk config, one profile), as its users run it:
every scenario and section runs and is printed, so the script cannot rot (no wall-clock figure is
asserted). benchmarks/ui_backfill.py's smoke run is in test_ui_backfill_benchmark.py: a file of its own,
so the two (minutes each) run on different workers."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_end_to_end_runs_every_scenario_the_size_axis_and_the_dagster_overhead(tmp_path: Path) -> None:
    data = one_by_one_data(tmp_path / "tiny")
    summary_file = tmp_path / "summary.json"
    text = benchmark(
        "end_to_end.py",
        data,
        "--quick",
        "--repeats",
        "1",
        "--overhead-repeats",
        "1",
        "--json",
        str(summary_file),
    )
    assert f"`rag-eval run` on {data} (3 documents, 1 chunk config(s) x 1 profile(s), --quick)" in text
    for scenario in ("cold", "warm", "edited", "profile"):
        assert re.search(rf"^{scenario} +wall +[0-9.]+ s \(in process.*\), CPU +[0-9.]+ s", text, re.M), (
            scenario
        )
    assert "Summary: medians of 1 repeat(s)" in text
    assert re.search(r"^cold / pure embedding +[0-9.]+x CPU .*\(goal at the demo size.*: n/a", text, re.M)
    assert re.search(r"^edited document +\d+ texts embedded: \d+ chunks of alpha/pumps\.md ", text, re.M)
    assert re.search(r"^profile added +\d+ texts embedded \(0 of them chunks\)", text, re.M)
    # the size axis (--quick: 1x, the scenarios' runs, and 2x, the corpus twice, every chunk a new text)
    axis = text[text.index("Corpus-size axis, medians of 1 repeat(s)") :]
    rows = {
        m["size"]: m
        for m in re.finditer(
            r"^ +(?P<size>\d+)x +(?P<docs>\d+) +(?P<chunks>\d+) +(?P<distinct>\d+) +(?P<texts>\d+) +"
            r"(?P<cold>[0-9.]+) +[0-9.]+ +(?P<pure>[0-9.]+) +(?P<ratio>[0-9.]+)x +(?P<warm>[0-9.]+) +"
            r"(?P<speedup>[0-9.]+)x +cold/pure -; cold/warm (PASS|MISS)",
            axis,
            re.M,
        )
    }
    assert sorted(rows) == ["1", "2"], axis
    assert rows["1"]["docs"] == "3" and rows["2"]["docs"] == "6"
    assert int(rows["2"]["chunks"]) > int(rows["1"]["chunks"])
    for row in rows.values():
        assert row["chunks"] == row["distinct"]  # the copies cannot be served by the embedding cache
        assert float(row["cold"]) > float(row["warm"]) > 0 and float(row["pure"]) > 0
    assert int(rows["2"]["texts"]) > int(rows["1"]["texts"])
    overhead = text[text.index("Dagster overhead of one evaluation partition (medians of 1") :]
    assert re.search(r"^direct asset calls +[0-9.]+ s .*; CPU [0-9.]+ s", overhead, re.M)  # called directly
    assert re.search(r"^evaluation_job run +[0-9.]+ s .*x direct, .* CPU s a run \(goal", overhead, re.M)
    assert re.search(r"^events written +\d+ a run", overhead, re.M)
    assert re.search(r"^model load +[0-9.]+ CPU s +\(processes: ", text, re.M)
    goals = text[text.index("Goals (issue 34)") :]
    for label in (
        "the demo (full grid)",
        "at 16x",
        "over direct, CPU s",
        "model load",
        "cold CPU / warm CPU",
    ):
        assert re.search(rf"^[^\n]*{re.escape(label)}[^\n]*(PASS|MISS|n/a)", goals, re.M), label
    # the JSON summary: printed last on one line, and written to --json
    printed = json.loads(text.rstrip().splitlines()[-1].removeprefix("summary json: "))
    assert printed == json.loads(summary_file.read_text(encoding="utf-8"))
    assert set(printed["axis"]) == {"1x", "2x"} and printed["axis"]["2x"]["documents"] == 6
    assert printed["goals"]["cold_vs_embedding_16x"]["verdict"] == "n/a"
    assert printed["goals"]["overhead"]["verdict"] in ("PASS", "MISS")
    assert printed["scenarios"]["cold"]["cpu_s"] > 0 and printed["overhead"]["dagster_cpu_s"]


def end_to_end() -> Any:
    """benchmarks/end_to_end.py as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("end_to_end", BENCHMARKS / "end_to_end.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("end_to_end", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_size_axis_copies_are_new_texts_of_the_same_shape(tmp_path: Path) -> None:
    """Every sentence of a copy differs from the original's, code fences stay fences; size k holds k
    copies of every document, the first the original."""
    bench = end_to_end()
    original = (
        "# Pumps\n\nThe pump runs at 1,450 rpm. It is serviced every 90 days.\n\n```\nrpm = 1450\n```\n"
        "- a list item\n"
    )
    assert bench.vary_text(original, 3) == (
        "# Pumps [copy 3]\n\nThe pump runs at 1,450 rpm [copy 3]. It is serviced every 90 days [copy 3].\n\n"
        "```\nrpm = 1450 [copy 3]\n```\n- a list item [copy 3]\n"
    )
    corpus = tmp_path / "corpus"
    (corpus / "alpha").mkdir(parents=True)
    (corpus / "alpha" / "pumps.md").write_text(original, encoding="utf-8")
    (corpus / "notes.txt").write_text("Valves are tested in March.\n", encoding="utf-8")
    assert bench.scale_corpus(corpus, 3) == 6
    assert sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*") if p.is_file()) == [
        "alpha/pumps.md",
        "copy-02/alpha/pumps.md",
        "copy-02/notes.txt",
        "copy-03/alpha/pumps.md",
        "copy-03/notes.txt",
        "notes.txt",
    ]
    assert (corpus / "alpha" / "pumps.md").read_text(encoding="utf-8") == original
    assert (corpus / "copy-02" / "notes.txt").read_text(
        encoding="utf-8"
    ) == "Valves are tested in March [copy 2].\n"


def test_real_documents_replace_the_corpus_and_questions_are_synthesised(tmp_path: Path) -> None:
    """--corpus FOLDER: its .md and .txt files (hidden folders and other formats left out) become the
    workspace's corpus, and evaluate_on becomes synthetic (the golden set is about the demo)."""
    bench = end_to_end()
    workspace = tmp_path / "workspace"
    (workspace / "data" / "corpus").mkdir(parents=True)
    (workspace / "data" / "corpus" / "demo.md").write_text("# Demo\n", encoding="utf-8")
    (workspace / "data" / "generation.yaml").write_text(
        "# questions\nevaluate_on: golden\nseed: 1\n", encoding="utf-8"
    )
    folder = tmp_path / "mine"
    for rel in ("guide.md", "deep/notes.TXT", "picture.png", ".git/HEAD.md"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(f"{rel} text.\n", encoding="utf-8")
    assert bench.use_real_documents(workspace, folder) == 2
    corpus = workspace / "data" / "corpus"
    assert sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*") if p.is_file()) == [
        "deep/notes.TXT",
        "guide.md",
    ]
    generation = (workspace / "data" / "generation.yaml").read_text(encoding="utf-8")
    assert generation == "# questions\nevaluate_on: synthetic\nseed: 1\n"
    with pytest.raises(SystemExit, match=r"--corpus .*: no \.md or \.txt file in it"):
        bench.use_real_documents(workspace, folder / "deep" / "nothing-here")
