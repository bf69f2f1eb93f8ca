"""`rag-eval questions plan [--detect D] [--pilot N]` as a user runs it on the tiny project: the pilot's
questions and setups, the questions needed to detect D at 80 % power (the closed form of
core/leaderboard/power.py on the spread it printed), what the evaluation's questions detect now, and
nothing written but embeddings; a bad --detect or --pilot exits 2 before anything is computed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_eval_pipeline.core.leaderboard.power import questions_needed
from rag_eval_pipeline_tests.faults.entry_points import rag_eval

# evaluate on the golden file (4 questions) and on offline questions: the tiny documents hold short
# passages, so the offline generator is told to ask about passages of 40 characters and more
GENERATION = "evaluate_on: both\ntoken_level: {n_questions: 12, passage_min_chars: 40}\n"


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow  # the real embedding model, in a subprocess
def test_the_plan_prints_the_questions_needed_from_a_pilot_and_writes_no_table(tiny_project: Path) -> None:
    (tiny_project / "data" / "generation.yaml").write_text(GENERATION, encoding="utf-8")
    before = files_under(tiny_project)
    done = rag_eval(tiny_project, "questions", "plan", "--detect", "0.05")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    pilot = re.search(
        r"^pilot: (\d+) paraphrase questions \(12 asked for.*\) on fixed-60-0 \(the cheapest", out, re.M
    )
    assert pilot is not None, out
    kept = int(pilot.group(1))
    assert re.search(r"^  span_recall_1000t: top(2|4) \d\.\d{3}, top(2|4) \d\.\d{3}$", out, re.M), out
    spread = re.search(r"the best and the next, top\d and top\d: (\d\.\d{3}) over (\d+) questions", out)
    assert spread is not None and int(spread.group(2)) == kept, out
    needed = re.search(
        r"to detect a difference of 0\.050 in span_recall_1000t at 80 % power: ([\d,]+) questions if the next "
        r"setup is the only one that close \(two-sided, alpha 0\.05\), ([\d,]+) if all 3 other setups of the 4 "
        r"configured are \(Holm, alpha 0\.05/3\)",
        out,
    )
    assert needed is not None, out
    alone, shared = (int(needed.group(i).replace(",", "")) for i in (1, 2))
    sd = float(spread.group(1))  # printed to three decimals: the count lies between its ends' counts
    assert questions_needed(0.05, sd + 0.0005) >= alone >= questions_needed(0.05, sd - 0.0005)  # type: ignore[operator]
    assert shared > alone
    assert re.search(
        rf"^the evaluation's {4 + kept} questions now \(4 from data/datasets/golden_token_level\.jsonl \+ {kept} "
        r"made by the paraphrase generator of data/generation\.yaml\) detect a difference of \d\.\d{3} at 80 % "
        r"power, \d\.\d{3} at alpha 0\.05/3$",
        out,
        re.M,
    ), out
    assert "written: only embeddings" in done.stderr
    # nothing but the embedding cache: no warehouse table, no Dagster run, no ledger, no index
    assert files_under(tiny_project) - before == {"data/cache/embeddings.sqlite"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--detect", "0"], "--detect 0: the difference to detect"),
        (["--detect", "1.5"], "between 0 and 1 (exclusive)"),
        (["--detect", "a lot"], "argument --detect: invalid float value"),
        (["--pilot", "1"], "--pilot 1: a pilot needs at least 2 questions"),
    ],
)
def test_a_bad_difference_or_pilot_exits_2_before_anything_is_computed(
    tiny_project: Path, args: list[str], said: str
) -> None:
    before = files_under(tiny_project)
    done = rag_eval(tiny_project, "questions", "plan", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert files_under(tiny_project) == before
