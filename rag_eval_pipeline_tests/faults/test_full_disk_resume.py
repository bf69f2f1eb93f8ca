"""A whole workspace on a disk that fills up, then grows, through `rag-eval run`, `list` and
`run --resume` (issue 30): every failure is one message naming the store, the OS error and what to do,
with exit 1, never a traceback or a bus error; and the resume on the grown disk finishes the evaluation.

The disk is a real tmpfs in a private mount namespace (faults/disk.py). On tmpfs, opening a Qdrant
collection of the embedded engine (qdrant-edge) fills the holes of its memory-mapped vector file
(33.5 MB whatever the number of points): the workspace is left 16 MB, room for everything a run writes
but not for that, so the pre-check must count it (before, the process died of SIGBUS, exit 135).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.faults.disk import in_private_namespace, require_private_mounts
from rag_eval_pipeline_tests.faults.entry_points import rag_eval_command, rag_eval_env

pytestmark = pytest.mark.slow

RUN = ("run", "--chunk-configs", "fixed-60-0", "--profiles", "top2")
TRACEBACK = "Traceback (most recent call last)"
ROOM_KB = 16 * 1024  # what the first run finds free

# $1 the mount point, $2 the tiny project to copy there, $3 the folder results go to, $4 `rag-eval`,
# then the first run's arguments. Each step records its exit code and output; `du` the Qdrant folder's
# real size before and after the last resume, which opens the collection.
SCRIPT = """
M=$1; SEED=$2; OUT=$3; RAG_EVAL=$4; shift 4
step() { name=$1; shift; rc=0; "$RAG_EVAL" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" || rc=$?; echo $rc >"$OUT/$name.rc"; }
mount -t tmpfs -o size=256m tmpfs "$M"
cp -a "$SEED" "$M/project"
free=$(df -k --output=avail "$M" | tail -n 1)
dd if=/dev/zero of="$M/filler" bs=1024 count=$((free - ROOM_KB)) 2>/dev/null
step first "$@"
evaluation=$(grep -m 1 '^evaluation eval-' "$OUT/first.out" | cut -d " " -f 2)
dd if=/dev/zero of="$M/filler-2" bs=4096 2>/dev/null || true
step list list
step full run --resume "$evaluation"
rm "$M/filler-2"
step partial run --resume "$evaluation"
rm "$M/filler"
du -s -B1 "$M/project/data/qdrant" | cut -f 1 >"$OUT/qdrant-before"
step grown run --resume "$evaluation"
du -s -B1 "$M/project/data/qdrant" | cut -f 1 >"$OUT/qdrant-after"
"""


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_private_mounts()
    from rag_eval_pipeline_tests.conftest import write_tiny_project

    root = tmp_path_factory.mktemp("full_disk")
    seed = write_tiny_project(root / "seed")
    mount, out = root / "disk", root / "out"
    mount.mkdir()
    out.mkdir()
    env = rag_eval_env(mount / "project")
    rag_eval = root / "rag-eval"
    rag_eval.write_text(f'#!/bin/sh\nexec {shlex.join(rag_eval_command())} "$@"\n', encoding="utf-8")
    rag_eval.chmod(0o755)
    script = SCRIPT.replace("ROOM_KB", str(ROOM_KB))
    done = in_private_namespace(
        script, (str(mount), str(seed), str(out), str(rag_eval), *RUN), env=env, timeout=1800
    )
    assert done.returncode == 0, f"the fault script failed: {done.stderr}"
    return out


def outcome(out: Path, name: str) -> tuple[int, str]:
    said = (out / f"{name}.out").read_text() + (out / f"{name}.err").read_text()
    return int((out / f"{name}.rc").read_text()), said


QDRANT_FULL = re.compile(
    r"cannot open Qdrant collection folder (?P<folder>\S+/data/qdrant/\S+): \[Errno 28\] No space left on "
    r"device: (?P<free>[\d,]+) bytes free, about (?P<needed>[\d,]+) needed .*: free space on that disk"
)


@pytest.mark.parametrize("name", ["first", "partial"])
def test_no_room_to_open_the_collection_is_said_before_the_engine_dies_of_it(steps: Path, name: str):
    returncode, said = outcome(steps, name)
    assert returncode == 1, said  # not 135 (SIGBUS), not 2 (bad input)
    assert TRACEBACK not in said, said
    found = QDRANT_FULL.search(said)
    assert found, said
    assert int(found["free"].replace(",", "")) < int(found["needed"].replace(",", ""))


@pytest.mark.parametrize("name", ["list", "full"])
def test_a_full_disk_under_the_dagster_storage_is_named_without_a_traceback(steps: Path, name: str):
    returncode, said = outcome(steps, name)
    assert returncode == 1, said
    assert TRACEBACK not in said and "sqlalchemy" not in said.lower(), said
    storage = steps.parent / "disk" / "project" / ".dagster" / "storage"
    assert f"error: cannot write Dagster storage {storage}: " in said, said
    assert "no space is left on that disk: free space on that disk" in said, said


def test_the_resume_on_the_grown_disk_finishes_and_the_estimate_held(steps: Path):
    returncode, said = outcome(steps, "grown")
    assert returncode == 0, said
    assert re.search(r"evaluation eval-\S+: \d+ runs planned, \d+ ran \(\d+ succeeded, 0 failed\)", said), (
        said
    )
    assert re.search(r"^1 +1 +fixed-60-0 +top2 ", said, re.MULTILINE), said  # the leaderboard
    # what opening the collection really took against what the check asked for
    _, first = outcome(steps, "first")
    found = QDRANT_FULL.search(first)
    assert found, first
    needed = int(found["needed"].replace(",", ""))
    taken = int((steps / "qdrant-after").read_text()) - int((steps / "qdrant-before").read_text())
    assert taken <= needed <= 2 * taken, (taken, needed)
