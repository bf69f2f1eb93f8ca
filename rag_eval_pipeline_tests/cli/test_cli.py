"""`python -m rag_eval_pipeline run`, the README's main command, as a user runs it."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG
from rag_eval_pipeline.core.store.warehouse import LEADERBOARD, Warehouse
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests import forked_cli

pytestmark = pytest.mark.slow


def rag_eval(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "QDRANT_URL")}
    env["RAG_EVAL_PROJECT_DIR"] = str(project)
    return forked_cli.run(args, env)


def test_run_prints_the_leaderboard_and_stores_everything_in_the_project(
    tiny_project: Path, monkeypatch: pytest.MonkeyPatch
):
    done = rag_eval(tiny_project, "run", "--profiles", "top2")
    assert done.returncode == 0, done.stderr
    first, *printed, last = done.stdout.strip().splitlines()
    blank = printed.index("")  # the recommendation, then the table
    recommendation, table = printed[:blank], printed[blank + 1 :]
    assert recommendation[0].startswith("Recommended: ") and recommendation[1].startswith("  tier 1: ")
    evaluation_id = first.split()[1]
    assert first == (
        f"evaluation {evaluation_id} (full mode): 1 ingestion + 2 chunking + 2 evaluation + 1 leaderboard "
        f"runs, in process"
    )
    assert last == (
        f"evaluation {evaluation_id}: 6 runs planned, 6 ran (6 succeeded, 0 failed), 0 not run; "
        f"details: rag-eval status {evaluation_id}"
    )
    assert table[0].split()[:8] == [
        "rank",
        "tier",
        "chunk_config",
        "profile",
        "k",
        "context",
        "p95",
        "span_recall_1000t",
    ]
    assert {line.split()[2] for line in table[2:]} == {"fixed-60-0", "recursive-120-20"}
    assert (tiny_project / ".dagster" / "storage").is_dir()  # the project's dagster.yaml instance
    assert (tiny_project / "data/cache/embeddings.sqlite").is_file()
    board = Warehouse.in_project(tiny_project, {}).read_current(LEADERBOARD)  # the default: in the project
    assert board is not None and len(board) == 2
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the instance the command used: the project's
    monkeypatch.chdir(tiny_project)  # dagster.yaml, whose storage paths are relative to the project root
    with project_instance(tiny_project) as instance:  # every run of the command carries its id
        runs = instance.get_runs(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id}))
        assert len(runs) == 6 == len(instance.get_runs())

    again = rag_eval(tiny_project, "leaderboard")
    assert again.returncode == 0 and again.stdout.strip() == "\n".join(printed)

    # the Pareto front of the objective against a cost, from the measured costs of the stored board
    front = rag_eval(tiny_project, "leaderboard", "--pareto", "--cost", "latency_p95_ms")
    assert front.returncode == 0, front.stderr
    heading, _, header, _, *rows = front.stdout.strip().splitlines()
    assert heading.startswith("Pareto front of span_recall_1000t against latency_p95_ms: ")
    assert header.split()[:4] == ["latency_p95_ms", "span_recall_1000t", "tier", "setup"]
    setups = [f"{r['chunk_config']} x {r['profile']}" for _, r in board.iterrows()]
    assert 1 <= len(rows) <= len(setups) and all(row.split()[1] == "ms" for row in rows)
    assert all(sum(setup in row for setup in setups) == 1 for row in rows)
    assert board["latency_p95_ms"].notna().all() and (board["index_bytes"] > 0).all()
    assert (board["usd_per_1k_questions"] > 0).all() and (board["index_usd"] == 0).all()  # local MiniLM
    wrong = rag_eval(tiny_project, "leaderboard", "--cost", "latency_p95_ms")  # an axis without --pareto
    assert wrong.returncode == 2 and "--cost chooses the axis of --pareto" in wrong.stderr


def test_help_lists_every_command(tiny_project: Path):
    done = rag_eval(tiny_project, "--help")
    assert done.returncode == 0
    listed = done.stdout.split("{", 1)[1].split("}", 1)[0].split(",")
    mine = [
        "run",
        "status",
        "list",
        "cancel",
        "regenerate-questions",
        "leaderboard",
        "profiles",
        "chunk-configs",
        "questions",
        "results",
        "dataset",
    ]
    assert [command for command in listed if command in mine] == mine  # history commands join them


def test_bad_selection_and_bad_config_exit_2_with_the_reason(tiny_project: Path):
    done = rag_eval(tiny_project, "run", "--chunk-configs", "nope")
    assert done.returncode == 2
    assert "unknown chunk config(s) nope" in done.stderr
    (tiny_project / "data/chunk_configs.yaml").write_text(
        "chunk_configs:\n  - {name: x, chunker: fixed, chunk_size: 10, chunk_overlap: 10}\n"
    )
    done = rag_eval(tiny_project, "run")
    assert done.returncode == 2 and "chunk_overlap (10) must be smaller than chunk_size (10)" in done.stderr


def test_a_reader_that_stops_early_gets_no_traceback(tiny_project: Path):
    """`rag-eval query ... | head -2`: the pipe closes under a long output."""
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "QDRANT_URL")}
    env["RAG_EVAL_PROJECT_DIR"] = str(tiny_project)
    command = [sys.executable, "-m", "rag_eval_pipeline", "query", "select range as x from range(200000)"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().strip() == b"x"
    process.stdout.close()  # as head does after its lines
    errors = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "--mode", "quick"], "run"),
        (["--workspace", "w", "status", "eval-1"], "status"),
        (["--workspace=w", "query", "SELECT 1"], "query"),
        (["--help"], None),
        (["--work", "w", "run"], None),  # argparse's abbreviation: the whole parser reads it
        (["no-such-command"], None),
        ([], None),
    ],
)
def test_the_command_is_found_before_parsing(argv: list[str], named: str | None) -> None:
    from rag_eval_pipeline.cli import command_named

    assert command_named(argv) == named


def test_a_command_imports_the_parsers_of_its_own_module_only() -> None:
    """`rag-eval query ...` builds the parsers of cli/history.py alone: the other command modules'
    imports (pandas, DuckDB, bs4, Dagster...) are not paid by a process that does not use them."""
    code = (
        "import sys\n"
        "from rag_eval_pipeline.cli import build_parser, command_named\n"
        "args = build_parser(command_named(['--workspace', 'w', 'query', 'SELECT 1'])).parse_args(\n"
        "    ['--workspace', 'w', 'query', 'SELECT 1'])\n"
        "print(args.command, sorted(m for m in sys.modules if m.startswith('rag_eval_pipeline.cli.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    command, modules = done.stdout.split(" ", 1)
    assert command == "query"
    assert "rag_eval_pipeline.cli.history" in modules
    for other in ("runs", "leaderboard", "search", "judgements", "explain", "serve", "annotate"):
        assert f"rag_eval_pipeline.cli.{other}'" not in modules, other


def test_the_process_entry_exits_with_mains_code_after_freezing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from rag_eval_pipeline import cli

    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(cli, "main", lambda: 3)
    with pytest.raises(SystemExit) as exited:
        cli.entry()
    assert exited.value.code == 3 and frozen == [True]
