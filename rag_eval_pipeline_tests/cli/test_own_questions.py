"""A project without golden questions, through `rag-eval run` in process: asking for the golden set
(the default) exits 2 before any run, naming the file and the import; with evaluate_on: synthetic it
evaluates on paraphrase questions (leaderboard printed, no known-item caveat, no traceback); a broken
golden file is still bad input (exit 2, file and line); questions imported into the golden location are
then what it evaluates, and synthetic_questions computes nothing."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.conftest import TINY_DOCS, latest_metadata

pytestmark = pytest.mark.slow

CAVEAT = "questions: known-item (bags of salient terms, which favour keyword retrieval)"
ONE_PARTITION = ["run", "--chunk-configs", "recursive-120-20", "--profiles", "top2"]
SMALL = "token_level: {n_questions: 6, passage_min_chars: 40}\n"


@pytest.fixture
def project(project: Path) -> Path:
    """The shared tiny project (cli/conftest.py) with no golden file, and passages small enough for its
    short documents."""
    (project / "data/datasets/golden_token_level.jsonl").unlink()
    (project / "data/generation.yaml").write_text(SMALL, encoding="utf-8")
    return project


def test_a_project_without_golden_questions_asks_for_them_or_runs_on_generated_ones(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    golden = project / "data/datasets/golden_token_level.jsonl"
    generation = project / "data/generation.yaml"
    # evaluate_on: golden (the default here) without the file: bad input before any run
    assert main(ONE_PARTITION) == 2
    out, err = capsys.readouterr()
    assert f"asks for the golden dataset {golden}, which does not exist" in err
    assert f"`rag-eval dataset import FILE --out {golden}`" in err and "Traceback" not in out + err
    assert "evaluation " not in out

    # evaluate_on: synthetic, as `rag-eval init` writes it: paraphrase questions (the offline default),
    # so no known-item caveat under the board
    generation.write_text("evaluate_on: synthetic\n" + SMALL, encoding="utf-8")
    assert main(ONE_PARTITION) == 0
    out, err = capsys.readouterr()
    assert "golden dataset" not in err
    assert "Traceback" not in out + err and "FAILED" not in err
    assert "rank  tier  chunk_config" in out and "recursive-120-20" in out  # the leaderboard
    assert not any(line.startswith(CAVEAT) for line in out.splitlines())
    with project_instance(project) as instance:
        assert latest_metadata(instance, "eval_questions")["evaluate_on"] == "synthetic"
        assert latest_metadata(instance, "synthetic_questions")["generator"] == "paraphrase"
        assert latest_metadata(instance, "synthetic_questions")["n_questions"] > 0

    # a golden file that is there but broken: bad input naming it and its line, as before
    generation.write_text("evaluate_on: golden\n" + SMALL, encoding="utf-8")
    golden.write_text("{not json\n", encoding="utf-8")
    assert main(ONE_PARTITION) == 2
    out, err = capsys.readouterr()
    assert f"{golden}, line 1: not valid JSON" in err and "Traceback" not in out + err

    # real questions, imported from elsewhere into the golden location: evaluated, nothing synthetic
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir()
    excerpt = "The main pump runs at 1,450 rpm"
    start = TINY_DOCS["alpha/pumps.md"].index(excerpt)
    with (elsewhere / "bench.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "doc_id", "start", "end", "text"])
        writer.writerow(["How fast is the pump?", "alpha/pumps.md", start, start + len(excerpt), excerpt])
    monkeypatch.chdir(elsewhere)
    assert main(["dataset", "import", "bench.csv", "--out", str(golden)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"next: `rag-eval run` evaluates on these questions (the project's golden set, {golden})"
    )
    monkeypatch.chdir(project)
    assert main(ONE_PARTITION) == 0
    out, err = capsys.readouterr()
    assert "golden dataset" not in err and CAVEAT not in out and "Traceback" not in out + err
    with project_instance(project) as instance:
        assert latest_metadata(instance, "eval_questions")["evaluate_on"] == "golden"
        assert latest_metadata(instance, "eval_questions")["n_questions"] == 1
        skipped = latest_metadata(instance, "synthetic_questions")
    assert skipped["skipped"] is True and skipped["n_questions"] == 0
    assert json.dumps(skipped["skip_reason"]).count("the evaluation uses only the golden set") == 1
