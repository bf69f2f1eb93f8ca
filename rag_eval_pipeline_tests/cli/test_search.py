"""`rag-eval search` in a workspace of the demo documents: killed in the middle of its race, it resumes
from the scores it stored, writes none of them again, and prints the winning tier, the front and the
compute saved."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rag_eval_pipeline.core.search.store import SEARCH_SCORES
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests import forked_cli
from rag_eval_pipeline_tests.conftest import write_tiny_project

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# two candidates on the tiny project: 4 questions raced over corpus samples, then the best confirmed
TINY_SPACE = """\
chunking: {chunker: [fixed], chunk_size: [60], overlap: [0], length: characters}
retrieval: {top_k: [2, 4], keyword_weight: [0]}
racing: {first_sample: 2, growth: 2.0, max_sample: null, confirm: 1, block_chars: 100}
"""
SPACE = """\
chunking: {chunker: [recursive], chunk_size: [100, 200], overlap: [0], length: tokens}
retrieval: {top_k: [1, 3, 5], keyword_weight: [0, 1]}
racing: {first_sample: 10, growth: 2.0, corpus_sampling: false}
"""


def workspace(tmp_path: Path) -> Path:
    """The demo's documents (read where they are), golden questions and settings, and a search space."""
    root = tmp_path / "ws"
    (root / "data/datasets").mkdir(parents=True)
    (root / "rag-eval.yaml").write_text(f"corpus: {REPO / 'data/corpus'}\n", encoding="utf-8")
    shutil.copy(REPO / "dagster.yaml", root / "dagster.yaml")
    for name in ("chunk_configs.yaml", "retrieval_profiles.yaml", "generation.yaml", "monitoring.yaml"):
        shutil.copy(REPO / "data" / name, root / "data" / name)
    for name in ("golden_token_level.jsonl", "golden_answer_labels.jsonl"):
        shutil.copy(REPO / "data/datasets" / name, root / "data/datasets" / name)
    (root / "data/search.yaml").write_text(SPACE, encoding="utf-8")
    return root


def command(root: Path) -> tuple[list[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "QDRANT_URL")}
    env["RAG_EVAL_PROJECT_DIR"] = str(root)
    return forked_cli.command("search"), env


def score_files(root: Path) -> dict[Path, int]:
    """Every stored score file and the time it was written (ns)."""
    folder = Warehouse.in_project(root, {}).history_table_dir(SEARCH_SCORES)
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*.parquet")} if folder.is_dir() else {}


def test_a_killed_search_resumes_and_pays_for_nothing_twice(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    args, env = command(root)
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    try:
        while len(score_files(root)) < 4:  # two chunk configs of three candidates each scored a round
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the search stored no scores within 300 s"
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    before = score_files(root)
    assert before and len(before) < 6 * 5  # killed in the race, not after it

    done = forked_cli.run(args[3:], env)
    assert done.returncode == 0, done.stderr
    after = score_files(root)
    assert {p: after[p] for p in before} == before  # not one stored score written again
    assert len(after) > len(before)
    out = done.stdout
    assert out.startswith("search search-") and "12 candidates" in out
    assert f"resumed: {len(before)} stored scores reused" in out
    assert "winning tier: " in out and "Pareto front" in out and "  queries: " in out
    listed = forked_cli.run(["list", "--limit", "1", "--format", "json"], env)
    (record,) = json.loads(listed.stdout)  # the run record: the search, from the command line
    assert (record["partitions"], record["trigger"], record["status"]) == ("search_job", "cli", "succeeded")
    eliminated = [line for line in out.splitlines() if "eliminated in round" in line]
    assert eliminated and all("corrected p" in line for line in eliminated)

    # finished: the third run scores nothing, and --apply writes the winning tier into the config files
    again = forked_cli.run([*args[3:], "--apply"], env)
    assert again.returncode == 0 and score_files(root) == after, again.stderr
    tier = out.split("winning tier: ", 1)[1].split(": ", 1)[1].splitlines()[0].split(", ")
    best = out.split("confirmed on every question over the whole corpus: ", 1)[1].split(" (")[0]
    assert best == tier[0]  # the confirmed winner leads the tier
    best_config, best_profile = best.split("--")
    configs = (root / "data/chunk_configs.yaml").read_text(encoding="utf-8")
    profiles = (root / "data/retrieval_profiles.yaml").read_text(encoding="utf-8")
    assert f"name: {best_config}" in configs and f"name: {best_profile}" in profiles, again.stdout[-600:]
    assert "data/chunk_configs.yaml: added" in again.stdout, again.stdout
    fates = [
        line for line in out.splitlines() if " on " in line and ("tier " in line or "eliminated" in line)
    ]
    assert fates and [line for line in again.stdout.splitlines() if line in fates] == fates  # the same fates


def test_a_broken_space_exits_2_naming_the_key(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "data/search.yaml").write_text("racing: {growth: 0.5}\n", encoding="utf-8")
    args, env = command(root)
    done = forked_cli.run(args[3:], env, timeout=300)
    assert done.returncode == 2 and "search.yaml: racing.growth must be > 1" in done.stderr


def test_the_output_keeps_the_two_bases_apart_and_says_when_the_search_paid_more(tmp_path: Path) -> None:
    """Issue 30: the confirmed winner's whole-corpus score and the survivors' race-sample scores shared
    one column (0.772 above 0.949), and the compute line read "750 of 720 queries (-4 % saved)". On the
    tiny project two candidates both survive the race over corpus samples, and the best is confirmed on
    every question over the whole corpus: 12 queries where the full grid asks 8."""
    root = write_tiny_project(tmp_path / "tiny")
    (root / "data/search.yaml").write_text(TINY_SPACE, encoding="utf-8")
    args, env = command(root)
    done = forked_cli.run(args[3:], env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("candidate "))
    assert header.split() == [
        "candidate",
        "whole",
        "corpus",
        "questions",
        "race",
        "sample",
        "questions",
        "fate",
    ]
    start = {name: header.index(name) for name in ("whole corpus", "race sample", "fate")}
    rows = {line.split()[0]: line for line in lines[lines.index(header) + 2 :] if "--k" in line.split()[0]}
    winner = out.split("confirmed on every question over the whole corpus: ", 1)[1].split(" (")[0]
    (survivor,) = set(rows) - {winner}

    def cell(key: str, column: str) -> str:
        line = rows[key]
        following = min((s for s in start.values() if s > start[column]), default=len(line))
        return line[start[column] : following].split()[0] if line[start[column] : following].strip() else ""

    assert cell(winner, "whole corpus") and cell(winner, "race sample")  # both bases, apart
    assert cell(survivor, "whole corpus") == "" and cell(survivor, "race sample")  # never on the whole corpus
    assert "survived the race" in rows[survivor] and "tier 1" in rows[winner]

    compute = lines[lines.index(next(line for line in lines if line.startswith("compute, "))) :][:4]
    assert compute[0].startswith(
        "compute, the search against the full grid (every candidate on every question"
    )
    assert "8 queries" in compute[0]
    queries = next(line for line in compute if line.strip().startswith("queries: "))
    assert (
        "queries: 12 (8 in the race, 4 confirming on the whole corpus), 4 more than the grid's 8 (+50%)"
        in queries
    )
    assert "the confirmation asked again, over the whole corpus" in queries
    assert "saved)" not in queries
