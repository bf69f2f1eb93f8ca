"""Trends over evaluations on other questions (issue 30): the report's "Trends over runs" joined
evaluations on 29, 30 and 8 questions into one line. A partition's line breaks where a run was not
measured like the run before it (another dataset, mode or question sample; the leaderboard's own rule,
core/evaluation/comparability.py), visibly and with the reason, in the HTML report, in `rag-eval history` and in
`rag-eval compare`.

One partition of the tiny project through `rag-eval run` (in process, on the project's own instance):
a quick run on 2 questions, a full run on the 4, then a full run after a fifth golden question was added.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests.chromium import parse_dom
from rag_eval_pipeline_tests.conftest import TINY_DOCS, write_tiny_project
from rag_eval_pipeline_tests.faults.entry_points import rag_eval

pytestmark = pytest.mark.slow

PARTITION = ("fixed-60-0", "top2")
ONE_PARTITION = ("--chunk-configs", PARTITION[0], "--profiles", PARTITION[1])
STAFF = "beta/staff.md"
DAY_SHIFT = "Day shift lead: Tomasz Wiśniewski"


def run(*args: str) -> str:
    """`rag-eval run ARGS` in this process; its evaluation id."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", *args])
    assert code == 0, err.getvalue()[-3000:]
    first = next(line for line in out.getvalue().splitlines() if line.startswith("evaluation eval-"))
    return first.split()[1]


def add_a_question(project: Path) -> None:
    """A fifth golden question: another dataset, of 5 questions."""
    start = TINY_DOCS[STAFF].index(DAY_SHIFT)
    line = {
        "inputs": {"query": "Who leads the day shift?"},
        "outputs": {
            "relevant_spans": [
                {"doc_id": STAFF, "start": start, "end": start + len(DAY_SHIFT), "text": DAY_SHIFT}
            ]
        },
        "metadata": {"question_id": "tiny-5"},
    }
    golden = project / "data/datasets/golden_token_level.jsonl"
    golden.write_text(
        golden.read_text(encoding="utf-8") + json.dumps(line, ensure_ascii=False) + "\n", "utf-8"
    )


def test_a_change_of_questions_breaks_the_trend_in_the_report_history_and_compare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_tiny_project(tmp_path / "project")
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(project))
    for name in (
        "DAGSTER_HOME",
        "OPENAI_API_KEY",
        "QDRANT_URL",
        "LANGSMITH_API_KEY",
        "RAG_EVAL_WAREHOUSE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(project)  # main() changes to the project; this changes back afterwards

    run(*ONE_PARTITION, "--mode", "quick", "--sample-size", "2")
    full = run(*ONE_PARTITION)
    add_a_question(project)
    more = run(*ONE_PARTITION)
    why = ["full run on 4 questions vs quick runs", "other questions: 5 vs 4"]

    # the report: three points, no line joins runs on other questions, each break marked and said
    html = (Warehouse.in_project(project).reports_dir / "leaderboard.html").read_text(encoding="utf-8")
    trends = parse_dom(html).find("svg", id="trends")
    for panel in trends.find_all("g", class_="panel"):
        (series,) = [
            s
            for s in panel.find_all("g", class_="series")
            if (s.attrs["data-chunk-config"], s.attrs["data-profile"]) == PARTITION
        ]
        assert [p.attrs["data-mode"] for p in series.find_all(class_="point")] == ["quick", "full", "full"]
        assert not series.find_all("polyline")
        assert [b.attrs["data-break"] for b in series.find_all("line", class_="break")] == why
    said = parse_dom(html).find("p", id="trends-breaks").text()
    assert all("fixed-60-0 × top2 from " in said and reason in said for reason in why)

    # `rag-eval history`: the same breaks, on the rows that start a new line
    history = rag_eval(project, "history", "span_recall", "--partition", "|".join(PARTITION), timeout=120)
    assert history.returncode == 0, history.stderr
    rows = [line for line in history.stdout.splitlines() if line.startswith("|".join(PARTITION))]
    assert [r.split("new line: ", 1)[1] if "new line: " in r else "" for r in rows] == ["", *why]

    # `rag-eval compare`: B was not measured like A, and it says how
    compared = rag_eval(project, "compare", full, more, "--metrics", "span_recall", timeout=120)
    assert compared.returncode == 0, compared.stderr
    assert "fixed-60-0|top2: B was not measured like A (other questions: 5 vs 4)" in compared.stdout
