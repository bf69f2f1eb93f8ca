"""benchmarks/search.py on the first 60 questions of the real data, a small space and a cheap embedder:
every figure it promises is printed, for each of two race seeds, and the search's confirmed winner is in
the full grid's tier 1."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rag_eval_pipeline_tests.fakes import HashingEmbedder

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "search.py"
SPACE = """\
chunking: {chunker: [fixed], chunk_size: [100, 400], overlap: [0], length: characters}
retrieval: {top_k: [1, 5], keyword_weight: [0, 1]}
racing: {first_sample: 10, growth: 2.0}
"""


def load_script() -> ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("search_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_benchmark_compares_the_search_with_the_full_grid(tmp_path: Path) -> None:
    module = load_script()
    space = tmp_path / "search.yaml"
    space.write_text(SPACE, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = module.main(
            [
                *("--space", str(space), "--limit-questions", "60", "--work", str(tmp_path / "work")),
                *("--race-seeds", "7,3", "--racing", "max_sample=40"),
            ],
            embedder=HashingEmbedder(),
        )
    text = out.getvalue()
    assert code == 0, text
    assert "8 candidates" in text and "60 questions" in text
    assert re.search(r"full grid: 8 candidates x 60 questions in \d", text)
    assert re.search(r"queries 480\b", text)  # the grid asks every candidate every question
    for seed in (7, 3):
        # at most 40 questions raced (--racing max_sample=40): three rounds, fewer once one is left
        assert re.search(rf"search \(seed {seed}, search-\w+\): [23] rounds of 10, 20(, 40)? questions", text)
    winners = re.findall(
        r"  confirmed winner: (\S+) [0-9.]+ on every question over the whole corpus \(full grid [0-9.]+; "
        r".*\); in the full grid's tier 1: yes",
        text,
    )
    assert len(winners) == 2, text
    assert len(re.findall(r"  winning tier \(\d+: no test told them from the best in the race\)", text)) == 2
    assert re.search(r"chunk texts indexed [0-9,]+ \(\d+% of the grid's\)", text)
    assert "eliminated though in the full grid's tier 1: none" in text
    assert re.search(
        r"over 2 race seeds \(7, 3\): the confirmed winner in the full grid's tier 1 2 of 2", text
    )


@pytest.mark.slow
def test_questions_and_corpora_select_the_data_as_in_the_chroma_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script()
    questions = tmp_path / "questions_df.csv"  # any questions file, here under the public benchmark's name
    questions.write_bytes((module.DEFAULT_DATA / "questions.csv").read_bytes())
    space = tmp_path / "search.yaml"
    space.write_text(
        "chunking: {chunker: [fixed], chunk_size: [200], overlap: [0], length: characters}\n"
        "retrieval: {top_k: [5], keyword_weight: [0, 1]}\n"
        "racing: {first_sample: 6, growth: 2.0}\n",
        encoding="utf-8",
    )
    argv = ["--space", str(space), "--questions", str(questions), "--work", str(tmp_path / "work")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = module.main(
            [*argv, "--corpora", "chatlogs", "--limit-questions", "12"], embedder=HashingEmbedder()
        )
    text = out.getvalue()
    assert code == 0, text
    assert re.search(
        rf"corpora: chatlogs \(1 documents, 40,000 characters\); questions: \d+ .*from {questions}", text
    )
    assert re.search(r"of the file's 276 questions dropped, their corpora not selected", text)
    assert "chroma_general: 1 corpora, 40,000 characters, 12 questions; 2 candidates" in text

    assert module.main([*argv, "--corpora", "chatlogs,nope"], embedder=HashingEmbedder()) == 2
    assert "--corpora: unknown corpus name(s)" in capsys.readouterr().err
