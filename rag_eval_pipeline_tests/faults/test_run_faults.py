"""What `rag-eval` says and returns when runs fail, are killed or never start: bad input exits 2 naming
the file, any other failure exits 1 with its root cause, the counts say what ran, a leaderboard that is
not this evaluation's says so, a SIGKILLed run does not stay "in progress", and `run --resume` runs
exactly what did not succeed. Driven through `rag-eval` subprocesses on the tiny project."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, PARTITION_TAG
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.conftest import CliRunFactory
from rag_eval_pipeline_tests.faults.entry_points import rag_eval, rag_eval_command, rag_eval_env
from rag_eval_pipeline_tests.instances import instance_for_tests

GOLDEN = Path("data/datasets/golden_token_level.jsonl")

# Loaded at interpreter start (PYTHONPATH): while the file ``hold`` exists, the run that writes the
# retrieval_results of the profile top4 writes ``held`` once the table's files are written (before Dagster
# records the materialization) and waits to be killed, so the test kills `rag-eval run` at a known point.
GATE = """
import time
from pathlib import Path

from rag_eval_pipeline.core.store.warehouse import Warehouse

GATE = Path({gate!r})
_write_table = Warehouse.write_table


def gated_write_table(self, frame, table, partition, *args, **kwargs):
    written = _write_table(self, frame, table, partition, *args, **kwargs)
    if table == "retrieval_results" and partition.get("profile") == "top4" and (GATE / "hold").exists():
        (GATE / "held").write_text("held")
        while (GATE / "hold").exists():  # until killed
            time.sleep(0.05)
    return written


Warehouse.write_table = gated_write_table
"""


def evaluation_id_of(out: str) -> str:
    """The id `rag-eval run` prints first (on stdout; warnings on stderr may come before it)."""
    first = next((line for line in out.splitlines() if line.startswith("evaluation eval-")), None)
    assert first is not None, out
    return first.split()[1]


def runs_of(project: Path, evaluation_id: str) -> list[dg.DagsterRun]:
    """The runs on the project's own instance (its dagster.yaml storage is relative to the project root:
    the tests using this chdir there)."""
    assert Path.cwd() == project.resolve()
    with project_instance(project) as instance:
        return list(instance.get_runs(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id})))


def run_keys(runs: list[dg.DagsterRun]) -> list[tuple[str, str]]:
    return sorted((r.job_name, r.tags.get(PARTITION_TAG, "")) for r in runs)


def listed_row(out: str, evaluation_id: str) -> list[str]:
    """`rag-eval list`'s row: id, date, time, mode, runs, succeeded, failed, in progress, partitions."""
    return next(line.split() for line in out.splitlines() if line.startswith(evaluation_id))


def history_of_evaluation(
    project: Path, table: str, partition: dict[str, str], evaluation_id: str
) -> list[int]:
    """The row counts of the history files an evaluation holds for a table partition."""
    folder = Warehouse.in_project(project, {}).history_partition_dir(table, partition)
    frames = [pd.read_parquet(path) for path in sorted(folder.glob("*.parquet"))]
    return [len(f) for f in frames if set(f["evaluation_id"]) == {evaluation_id}]


def break_first_span(project: Path) -> None:
    lines = (project / GOLDEN).read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["outputs"]["relevant_spans"][0]["text"] = "words that are not in the document"
    (project / GOLDEN).write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")


def test_corpus_error_exits_2_naming_the_file(tiny_project: Path) -> None:
    bad = tiny_project / "data/corpus/alpha/latin1.md"
    bad.write_bytes("Caf\xe9 au lait\n".encode("latin-1"))

    # inside a Dagster step (`rag-eval run` checks the corpus before its first run)
    regenerated = rag_eval(tiny_project, "regenerate-questions")
    assert regenerated.returncode == 2, regenerated.stderr
    assert "regenerating the questions failed" in regenerated.stderr
    assert f"corpus: {bad} is not valid UTF-8" in regenerated.stderr


def test_a_failure_in_an_io_manager_shows_its_root_cause(tmp_path: Path) -> None:
    """Dagster wraps what an IO manager raises ("Error occurred while handling output ..."): the
    message `rag-eval` shows is the cause chain under the wrapper, with the path and the OS error."""
    from rag_eval_pipeline.runner.run_failures import failure_of_result

    target = tmp_path / "missing" / "table.parquet"

    class Unwritable(dg.ConfigurableIOManager):
        def handle_output(self, context: dg.OutputContext, obj: object) -> None:
            try:
                target.open("w")
            except OSError as exc:
                raise RuntimeError(f"could not write {target}") from exc

        def load_input(self, context: dg.InputContext) -> object:
            return None

    @dg.asset(io_manager_key="unwritable")
    def table() -> int:
        return 1

    with instance_for_tests() as instance:
        result = dg.materialize(
            [table], instance=instance, resources={"unwritable": Unwritable()}, raise_on_error=False
        )
    failure = failure_of_result(result)
    assert failure.step_key == "table" and not failure.bad_input
    assert failure.message == (
        f'while handling output "result" of step "table": RuntimeError: could not write {target}; '
        f"caused by FileNotFoundError: [Errno 2] No such file or directory: '{target}'"
    )


@pytest.mark.slow
def test_killed_run_is_failed_and_resumed_then_failures_are_counted_and_boards_marked(
    tiny_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tiny_project
    monkeypatch.chdir(project)
    gate = tmp_path / "gate"
    hooks = tmp_path / "hooks"
    gate.mkdir()
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(GATE.format(gate=str(gate)), encoding="utf-8")
    (gate / "hold").touch()
    selection = ("--chunk-configs", "fixed-60-0", "--profiles", "top2,top4")

    # 1. `rag-eval run` killed with SIGKILL right after it wrote the retrieval_results of fixed-60-0 x top4
    log = tmp_path / "killed.log"
    with log.open("w") as out:
        child = subprocess.Popen(
            rag_eval_command("run", *selection),
            env=rag_eval_env(
                project,
                {"PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")]))},
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 300
            while not (gate / "held").exists():
                assert child.poll() is None, f"the run ended before the gate:\n{log.read_text()}"
                assert time.monotonic() < deadline, f"no gate after 300 s:\n{log.read_text()}"
                time.sleep(0.1)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
    (gate / "hold").unlink()
    evaluation_id = evaluation_id_of(log.read_text())
    top4 = {"chunk_config": "fixed-60-0", "profile": "top4"}
    (written,) = history_of_evaluation(project, "retrieval_results", top4, evaluation_id)
    statuses = {
        (r.job_name, r.tags.get(PARTITION_TAG, "")): r.status for r in runs_of(project, evaluation_id)
    }
    assert statuses == {
        ("chunking_job", "fixed-60-0"): dg.DagsterRunStatus.SUCCESS,
        ("evaluation_job", "fixed-60-0|top2"): dg.DagsterRunStatus.SUCCESS,
        ("evaluation_job", "fixed-60-0|top4"): dg.DagsterRunStatus.STARTED,  # nobody told Dagster
        ("ingestion_job", ""): dg.DagsterRunStatus.SUCCESS,
    }

    # 2. `list` and `status` find its process gone and mark the run failed, saying how to resume
    listed = rag_eval(project, "list")
    assert listed.returncode == 0, listed.stderr
    assert listed_row(listed.stdout, evaluation_id)[4:8] == ["4", "3", "1", "0"]
    assert "is gone" in listed.stderr and f"rag-eval run --resume {evaluation_id}" in listed.stderr
    status = rag_eval(project, "status", evaluation_id)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"evaluation {evaluation_id} (full): 4 runs, 3 succeeded, 1 failed")
    failed_line = next(line for line in status.stdout.splitlines() if line.startswith("FAILED"))
    assert "evaluation_job fixed-60-0|top4" in failed_line and "is gone" in failed_line
    assert f"`rag-eval run --resume {evaluation_id}`" in status.stdout

    # 3. --resume runs exactly what did not succeed, under the same id, and ends with the leaderboard
    before = {r.run_id for r in runs_of(project, evaluation_id)}
    resumed = rag_eval(project, "run", "--resume", evaluation_id)
    assert resumed.returncode == 0, resumed.stderr
    new_runs = [r for r in runs_of(project, evaluation_id) if r.run_id not in before]
    assert run_keys(new_runs) == [("evaluation_job", "fixed-60-0|top4"), ("leaderboard_job", "")]
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in new_runs)
    # each run's warnings follow it, one line each, without Dagster's notes on skipped partitions
    assert (
        "warning: leaderboard: answer_judgements: nothing judged: no judge LLM configured" in resumed.stderr
    )
    assert "Couldn't load partition" not in resumed.stderr
    out = resumed.stdout.splitlines()
    assert out[0].startswith(f"evaluation {evaluation_id} (full mode), resumed: 3 of its 5 planned runs")
    assert out[1].startswith("Recommended:")  # the recommendation, then the table
    lines = [line.split() for line in out[1:-1]]
    start = next(i for i, cells in enumerate(lines) if cells[:1] == ["rank"])
    header, rows = lines[start], lines[start + 2 :]
    assert header[:4] == ["rank", "tier", "chunk_config", "profile"] and "note" not in header
    assert sorted(row[3] for row in rows) == ["top2", "top4"]  # both rows, none marked
    assert out[-1] == (
        f"evaluation {evaluation_id}: 2 runs planned, 2 ran (2 succeeded, 0 failed), 0 not run; "
        f"details: rag-eval status {evaluation_id}"
    )
    # the history holds the partition's rows once for the evaluation: the resumed run wrote them again
    # (Dagster never recorded the killed run's write) and replaced the killed run's file (a second file
    # under the same evaluation id would count every row twice)
    assert history_of_evaluation(project, "retrieval_results", top4, evaluation_id) == [written]
    for table in ("retrieval_metrics", "retrieval_metrics_summary"):
        assert len(history_of_evaluation(project, table, top4, evaluation_id)) == 1, table
    # and the evaluation has succeeded: its failed run succeeded on resume
    listed = rag_eval(project, "list")
    assert listed_row(listed.stdout, evaluation_id)[4:10] == ["6", "5", "1", "0", "2", "0"]
    assert listed_row(listed.stdout, evaluation_id)[10] == "succeeded"
    status = rag_eval(project, "status", evaluation_id)
    assert status.stdout.splitlines()[1] == "status: succeeded", status.stdout
    again = rag_eval(project, "run", "--resume", evaluation_id)
    assert again.returncode == 0 and "nothing to resume" in again.stdout
    unknown = rag_eval(project, "run", "--resume", "eval-unknown")
    assert unknown.returncode == 2 and "no evaluation 'eval-unknown'" in unknown.stderr

    # 4. a dataset error fails ingestion: exit 2, exact counts, the printed board marked as not this one's
    golden = (project / GOLDEN).read_text(encoding="utf-8")
    break_first_span(project)
    broken = rag_eval(project, "run", "--chunk-configs", "fixed-60-0", "--profiles", "top2")
    (project / GOLDEN).write_text(golden, encoding="utf-8")
    assert broken.returncode == 2, broken.stderr
    broken_id = evaluation_id_of(broken.stdout)
    assert (
        "golden_token_level.jsonl, line 1" in broken.stderr
        and "FAILED: corpus and questions" in broken.stderr
    )
    # one line says it: no Dagster traceback of the failed step on the terminal
    assert "Traceback" not in broken.stderr and "Stack Trace" not in broken.stderr
    assert (
        "NOT RUN: ingestion failed, so 3 runs did not start: chunks + index fixed-60-0, "
        "evaluate fixed-60-0 x top2, leaderboard"
    ) in broken.stderr
    out = broken.stdout.splitlines()
    assert out[-1].startswith(
        f"evaluation {broken_id}: 4 runs planned, 1 ran (0 succeeded, 1 failed), 3 not run;"
    )
    assert out[1].startswith(f"NOT THE LEADERBOARD OF EVALUATION {broken_id}: its leaderboard did not run")
    rows = [line for line in out if line.split()[:1] in (["1"], ["2"])]
    assert len(rows) == 2 and all(row.endswith(f"from {evaluation_id}") for row in rows)
    assert len(runs_of(project, broken_id)) == 1

    # 5. a partition failing for another reason (its history folder is blocked by a file): exit 1 with
    #    the path and the OS error; the board is this evaluation's, its top4 row from the resumed one
    # the folder every run of that partition writes its retrieval_results history file to
    top4_history = (
        Warehouse.in_project(project, {})  # rag_eval's environment has no RAG_EVAL_WAREHOUSE_DIR
        .history_path("retrieval_results", {"chunk_config": "fixed-60-0", "profile": "top4"}, "any")
        .parent
    )
    shutil.move(top4_history, tmp_path / "top4_history")
    top4_history.write_text("in the way", encoding="utf-8")
    blocked = rag_eval(project, "run", "--force", *selection)  # up to date otherwise: nothing would write
    assert blocked.returncode == 1, blocked.stderr
    blocked_id = evaluation_id_of(blocked.stdout)
    failed = [line for line in blocked.stderr.splitlines() if line.startswith("FAILED: ")]
    assert len(failed) == 1 and failed[0].startswith("FAILED: evaluate fixed-60-0 x top4 (run ")
    assert str(top4_history) in failed[0] and "File exists" in failed[0]
    out = blocked.stdout.splitlines()
    assert not any(line.startswith("NOT THE LEADERBOARD") for line in out)
    rows = [line for line in out if line[:1].isdigit()]  # the table's (the recommendation names pairs too)
    top2 = next(line for line in rows if " top2 " in line)
    top4 = next(line for line in rows if " top4 " in line)
    assert "from eval-" not in top2 and top4.endswith(f"from {evaluation_id}")
    assert out[-1].startswith(
        f"evaluation {blocked_id}: 5 runs planned, 5 ran (4 succeeded, 1 failed), 0 not run;"
    )


CHUNK_CONFIG_ENTRIES = {
    "fixed-60-0": "  - name: fixed-60-0\n    chunker: fixed\n    chunk_size: 60\n",
    "fixed-90-0": "  - name: fixed-90-0\n    chunker: fixed\n    chunk_size: 90\n",
}
PROFILE_ENTRIES = {"top2": "  - name: top2\n    top_k: 2\n", "top4": "  - name: top4\n    top_k: 4\n"}


def workspace_files(chunk_configs: Sequence[str], profiles: Sequence[str]) -> dict[str, str]:
    """The config files of a workspace that holds only these chunk configs and profiles."""
    return {
        "data/chunk_configs.yaml": "chunk_configs:\n"
        + "".join(CHUNK_CONFIG_ENTRIES[c] for c in chunk_configs),
        "data/retrieval_profiles.yaml": "profiles:\n" + "".join(PROFILE_ENTRIES[p] for p in profiles),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("chunk_configs", "profiles"),
    [
        (["fixed-60-0"], ["top2"]),
        (["fixed-60-0"], ["top2", "top4"]),
        (["fixed-60-0", "fixed-90-0"], ["top2"]),
    ],
    ids=["1x1", "1x2", "2x1"],
)
def test_a_workspace_of_one_chunk_config_or_one_profile_runs_to_its_leaderboard(
    cli_run: CliRunFactory, chunk_configs: list[str], profiles: list[str]
) -> None:
    """The assets over every partition (answer_judgements, leaderboard) read them as a mapping however
    many there are: with one, Dagster's IO manager would hand over a bare frame and fail the type check."""
    workspace = cli_run(files=workspace_files(chunk_configs, profiles))  # its first `rag-eval run`
    ran = workspace.ran
    assert ran.returncode == 0, ran.stderr
    evaluation_id = evaluation_id_of(ran.stdout)
    out = ran.stdout.splitlines()
    cells = len(chunk_configs) * len(profiles)
    planned = 1 + len(chunk_configs) + cells + 1  # ingestion, chunking per config, evaluations, leaderboard
    assert out[-1].startswith(
        f"evaluation {evaluation_id}: {planned} runs planned, {planned} ran ({planned} succeeded, 0 failed)"
    )
    rows = [line.split() for line in out if line[:1].isdigit()]  # the board's ranked rows
    assert sorted((row[2], row[3]) for row in rows) == sorted((c, p) for c in chunk_configs for p in profiles)
    status = rag_eval(workspace.project, "status", evaluation_id)
    assert status.returncode == 0 and status.stdout.splitlines()[1] == "status: succeeded"


@pytest.mark.slow
def test_a_damaged_current_table_fails_run_and_resume_naming_it_and_force_rebuilds_it(
    cli_run: CliRunFactory,
) -> None:
    """A current table file that is not Parquet any more (truncated here): the run that reads it, and
    its --resume, fail with exit 1 naming the file and saying that --force rebuilds it; --force does."""
    # the 1x1 workspace after its first run (the run test_a_workspace_of_one_chunk_config_... checks)
    first = cli_run(files=workspace_files(["fixed-60-0"], ["top2"]))
    assert first.ran.returncode == 0, first.ran.stderr
    tiny_project = first.project
    data = tiny_project / "data"
    chunks = Warehouse.in_project(tiny_project, {}).current_path("chunks", {"chunk_config": "fixed-60-0"})
    chunks.write_bytes(chunks.read_bytes()[:100])
    # a new profile: its evaluation reads the chunks (everything else is up to date)
    (data / "retrieval_profiles.yaml").write_text(
        "profiles:\n" + PROFILE_ENTRIES["top2"] + PROFILE_ENTRIES["top4"], encoding="utf-8"
    )
    advice = "`rag-eval run --force` rebuilds it"

    broken = rag_eval(tiny_project, "run")
    assert broken.returncode == 1, broken.stderr
    (failed,) = [line for line in broken.stderr.splitlines() if line.startswith("FAILED: ")]
    assert failed.startswith("FAILED: evaluate fixed-60-0 x top4 (run ")
    assert f"cannot read {chunks}: ArrowInvalid: " in failed and advice in failed
    assert "Traceback" not in broken.stderr
    resumed = rag_eval(tiny_project, "run", "--resume", evaluation_id_of(broken.stdout))
    assert resumed.returncode == 1, resumed.stderr
    assert f"cannot read {chunks}: ArrowInvalid: " in resumed.stderr and advice in resumed.stderr

    forced = rag_eval(tiny_project, "run", "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"chunks: cannot read {chunks} (ArrowInvalid: " in forced.stderr  # not reused, cut again
    assert len(pd.read_parquet(chunks)) > 0
    assert forced.stdout.splitlines()[-1].startswith(
        f"evaluation {evaluation_id_of(forced.stdout)}: 5 runs planned, 5 ran (5 succeeded, 0 failed)"
    )


def test_resume_refuses_a_selection_of_its_own(tiny_project: Path) -> None:
    refused = rag_eval(tiny_project, "run", "--resume", "eval-x", "--profiles", "top2", "--mode", "quick")
    assert refused.returncode == 2
    assert "leave out --profiles, --mode" in refused.stderr


def test_a_project_folder_that_does_not_exist_exits_2(tmp_path: Path) -> None:
    missing = rag_eval(tmp_path / "nowhere", "list")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert (
        f"the workspace {tmp_path / 'nowhere'} (from $RAG_EVAL_PROJECT_DIR) does not exist" in missing.stderr
    )
    assert "rag-eval init DIR --corpus DOCS" in missing.stderr
