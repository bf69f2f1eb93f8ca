"""Disk faults through `rag-eval run`: a warehouse (RAG_EVAL_WAREHOUSE_DIR) on a read-only file system, then
on a full one. The run fails with the path and the OS error, not a traceback, leaves no temporary file,
and every file an earlier run wrote is still there, whole and readable.

The faults are real: a small tmpfs in a private mount namespace (faults/disk.py), remounted read-only,
then filled up. The namespace ends with the script, so the script copies the warehouse out after each
run for the assertions here.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rag_eval_pipeline.core.store.warehouse import LEADERBOARD, Warehouse
from rag_eval_pipeline_tests.faults.disk import in_private_namespace, leftovers, require_private_mounts
from rag_eval_pipeline_tests.faults.entry_points import rag_eval_command, rag_eval_env

pytestmark = pytest.mark.slow

RUN = ("run", "--force", "--chunk-configs", "fixed-60-0", "--profiles", "top2")  # each run writes

# $1 the warehouse mount point, $2 the folder the results are copied to, then `rag-eval` and the run's
# arguments. `rag-eval baseline set` writes outside a Dagster run (baselines.json in the warehouse).
SCRIPT = """
W=$1; OUT=$2; RAG_EVAL=$3; shift 3
run() { name=$1; shift; rc=0; "$RAG_EVAL" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" || rc=$?; echo $rc >"$OUT/$name.rc"; }
mount -t tmpfs -o size=4m tmpfs "$W"
run seed "$@"
cp -a "$W" "$OUT/seeded"
evaluation=$(head -n 1 "$OUT/seed.out" | cut -d " " -f 2)
mount -o remount,ro "$W"
run read-only "$@"
run baseline-read-only baseline set "$evaluation"
cp -a "$W" "$OUT/after-read-only"
mount -o remount,rw "$W"
dd if=/dev/zero of="$W/filler" bs=4096 2>/dev/null || true
run full "$@"
rm "$W/filler"
cp -a "$W" "$OUT/after-full"
"""


@pytest.fixture(scope="module")
def faulty_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A first run that fills the warehouse, then the same run on the read-only and on the full disk."""
    require_private_mounts()
    from rag_eval_pipeline_tests.conftest import write_tiny_project

    root = tmp_path_factory.mktemp("disk_faults")
    project = write_tiny_project(root / "project")
    warehouse, out = root / "warehouse", root / "out"
    warehouse.mkdir()
    out.mkdir()
    env = rag_eval_env(project, {"RAG_EVAL_WAREHOUSE_DIR": str(warehouse)})
    rag_eval = root / "rag-eval"  # the command as a user types it, for the script
    rag_eval.write_text(f'#!/bin/sh\nexec {shlex.join(rag_eval_command())} "$@"\n', encoding="utf-8")
    rag_eval.chmod(0o755)
    done = in_private_namespace(SCRIPT, (str(warehouse), str(out), str(rag_eval), *RUN), env=env)
    assert done.returncode == 0, f"the fault script failed: {done.stderr}"
    assert (out / "seed.rc").read_text().strip() == "0", (out / "seed.err").read_text()
    return out


def outcome(out: Path, name: str) -> tuple[int, str]:
    return int((out / f"{name}.rc").read_text()), (out / f"{name}.out").read_text() + (
        out / f"{name}.err"
    ).read_text()


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("fault", "os_error", "remedy"),
    [
        ("read-only", "[Errno 30] Read-only file system", "make that file system writable"),
        ("full", "[Errno 28] No space left on device", "free space on that disk"),
    ],
)
def test_a_run_on_a_faulty_warehouse_names_the_file_and_the_os_error(
    faulty_runs: Path, fault: str, os_error: str, remedy: str
):
    returncode, output = outcome(faulty_runs, fault)
    assert returncode == 1, output  # failed, and not for bad input (2)
    assert "Traceback (most recent call last)" not in output
    warehouse = faulty_runs.parent / "warehouse"
    named = re.search(rf"cannot write ({re.escape(str(warehouse))}/\S+): {re.escape(os_error)}", output)
    assert named, output
    assert not named[1].endswith(".tmp")  # the file the user knows, not our temporary name
    assert (faulty_runs / "seeded" / Path(named[1]).relative_to(warehouse)).is_file()  # a real table
    assert f"{remedy} or point RAG_EVAL_WAREHOUSE_DIR elsewhere" in output
    assert not leftovers(faulty_runs / f"after-{fault}")


@pytest.mark.parametrize("fault", ["read-only", "full"])
def test_what_an_earlier_run_wrote_survives_a_failed_run(faulty_runs: Path, fault: str):
    before, after = files(faulty_runs / "seeded"), files(faulty_runs / f"after-{fault}")
    assert set(after) == set(before)
    changed = [name for name in before if after[name] != before[name]]
    assert not changed
    for name in after:
        path = faulty_runs / f"after-{fault}" / name
        if name.endswith(".parquet"):
            pq.read_table(path)  # readable: a whole Parquet file
        elif name.endswith((".jsonl", ".json")):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines() if name.endswith(".jsonl") else [text]
            assert all(json.loads(line) is not None for line in lines if line.strip()), name


def test_a_command_that_writes_outside_a_run_names_the_file_too(faulty_runs: Path):
    returncode, output = outcome(faulty_runs, "baseline-read-only")
    warehouse = faulty_runs.parent / "warehouse"
    assert returncode == 1, output
    assert "Traceback (most recent call last)" not in output
    named = (
        rf"error: cannot [a-z ]+ {re.escape(str(Warehouse(warehouse).baselines_path.parent))}\S*: "
        r"\[Errno 30\] Read-only file system"
    )
    assert re.search(named, output), output


def test_the_tables_of_the_first_run_are_there(faulty_runs: Path):
    """The survivors checked above are the real tables, not an empty warehouse."""
    seeded = Warehouse(faulty_runs / "seeded")
    assert seeded.current_path("corpus").is_file()
    assert seeded.current_path(LEADERBOARD).is_file()
