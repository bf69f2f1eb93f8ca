"""`rag-eval run` on the tiny project with a weak question set (a near-duplicate question, a reference
that is an include directive): the question_set_health asset is materialized in the leaderboard's run,
its warnings are on the terminal (`warning: leaderboard: question_set_health: ...`), its table is in the
warehouse with its history, the report has its section, and a second run finds it up to date."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.question_health.report import QUESTIONS_TABLE
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.chromium import parse_dom
from rag_eval_pipeline_tests.faults.entry_points import rag_eval

pytestmark = pytest.mark.slow

TUTORIAL = (
    "# Body fields\n\nDeclare a body field with a default and a description.\n\n"
    "{* ../../docs_src/body_fields/tutorial001_an_py310.py hl[4] *}\n"
)
INCLUDE = "{* ../../docs_src/body_fields/tutorial001_an_py310.py hl[4] *}"


def weaken(project: Path) -> None:
    """A document with an include directive, a question whose reference is that directive, and a
    near-duplicate of tiny-1 ("How fast does the main pump run?")."""
    (project / "data/corpus/alpha/tutorial.md").write_text(TUTORIAL, encoding="utf-8")
    golden = project / "data/datasets/golden_token_level.jsonl"
    start = TUTORIAL.index(INCLUDE)
    pump = next(
        json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines() if "tiny-1" in line
    )
    added = [
        {
            "inputs": {"query": "Which file does the body fields tutorial include?"},
            "outputs": {
                "relevant_spans": [
                    {
                        "doc_id": "alpha/tutorial.md",
                        "start": start,
                        "end": start + len(INCLUDE),
                        "text": INCLUDE,
                    }
                ]
            },
            "metadata": {"question_id": "tiny-include"},
        },
        {
            "inputs": {"query": "How fast does the main pump run"},
            "outputs": {"relevant_spans": pump["outputs"]["relevant_spans"]},
            "metadata": {"question_id": "tiny-1-again"},
        },
    ]
    with golden.open("a", encoding="utf-8") as out:
        out.writelines(json.dumps(e, ensure_ascii=False) + "\n" for e in added)


def test_a_run_assesses_the_question_set_and_warns_where_it_is_weak(
    tiny_project: Path, monkeypatch: pytest.MonkeyPatch
):
    weaken(tiny_project)
    run = rag_eval(tiny_project, "run", timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    warnings = [
        line.removeprefix("warning: leaderboard: question_set_health: ")
        for line in run.stderr.splitlines()
        if line.startswith("warning: leaderboard: question_set_health: ")
    ]
    near, markup = warnings[0], warnings[1]
    assert near.startswith(
        "1 pair(s) of near-duplicate questions (embedding cosine >= 0.9; 2 questions, 33 %)"
    )
    assert "tiny-1 and tiny-1-again" in near and "drop all but one of each" in near
    assert markup.startswith("1 question(s) have references holding markup (include directives 1)")
    assert "e.g. tiny-include" in markup
    assert (
        warnings[-1].startswith("effective sample size ")
        and "add questions to the golden set" in warnings[-1]
    )

    warehouse = Warehouse(tiny_project / "data/warehouse")
    health = warehouse.read_current("question_set_health")
    assert health is not None and len(health) == 1
    row = health.iloc[0]
    assert (row["n_questions"], row["n_duplicate_pairs"], row["markup_include"], row["n_setups"]) == (
        6,
        1,
        1,
        4,
    )
    assert row["n_warnings"] == len(warnings)
    (history,) = warehouse.history_files("question_set_health")
    assert history.stem == row["run_id"]
    (per_question,) = warehouse.history_files(QUESTIONS_TABLE)
    questions = pd.read_parquet(per_question).set_index("question_id")
    assert questions.loc["tiny-include", "markup"] == "include"
    assert questions.loc["tiny-1-again", "nearest_question_id"] == "tiny-1"
    monkeypatch.chdir(tiny_project)  # the instance's storage paths are relative to the project
    with project_instance(tiny_project) as instance:
        (record,) = instance.fetch_materializations(dg.AssetKey("question_set_health"), limit=5).records
        assert record.run_id == row["run_id"]

    report = parse_dom(warehouse.report_paths(str(row["run_id"])).current.read_text(encoding="utf-8"))
    items = report.find("section", id="question-health").find("ul", id="health-warnings").find_all("li")
    assert [i.text() for i in items] == warnings

    again = rag_eval(tiny_project, "run", timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "8 runs planned, 0 ran" in again.stdout and "8 up to date" in again.stdout
    assert "question_set_health" not in again.stderr
