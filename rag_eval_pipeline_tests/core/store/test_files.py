"""The one atomic-write primitive: a failed write leaves the old file and no temporary one, and says
which path, which operation and which OS error."""

from __future__ import annotations

import errno
import json
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import StorageError
from rag_eval_pipeline.core.store.files import (
    file_system_type,
    make_folder,
    replace_folder_atomically,
    write_atomically,
    write_files_atomically,
    write_text_atomically,
)
from rag_eval_pipeline_tests.conftest import REPO
from rag_eval_pipeline_tests.faults.disk import UNSHARE, WRITERS, require_private_mounts

NO_SPACE = "[Errno 28] No space left on device"


def fills_the_disk(temporary: Path) -> None:
    """A writer that gets half way, then finds the disk full."""
    temporary.write_text("half a new ver", encoding="utf-8")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_write_replaces_the_file_and_leaves_nothing_else(tmp_path: Path):
    target = tmp_path / "reports" / "report.html"
    write_text_atomically(target, "old")
    write_text_atomically(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert os.listdir(target.parent) == ["report.html"]


def test_a_failed_write_keeps_the_old_file_removes_the_temporary_and_names_the_path(tmp_path: Path):
    target = tmp_path / "report.html"
    write_text_atomically(target, "old")
    with pytest.raises(StorageError) as failed:
        write_atomically(target, fills_the_disk)
    assert str(failed.value) == f"cannot write {target}: {NO_SPACE}: free space on that disk"
    assert (failed.value.path, failed.value.operation, failed.value.errno) == (str(target), "write", 28)
    assert isinstance(failed.value.__cause__, OSError)
    assert target.read_text(encoding="utf-8") == "old"
    assert os.listdir(tmp_path) == ["report.html"]


def test_a_library_s_own_words_around_the_errno_become_the_standard_text(tmp_path: Path):
    def pyarrow_like(temporary: Path) -> None:  # what pyarrow raises on a full disk
        temporary.write_bytes(b"PAR1")
        raise OSError(28, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    with pytest.raises(
        StorageError, match=rf"^cannot write {tmp_path}/t.parquet: \[Errno 28\] No space left on device: "
    ):
        write_atomically(tmp_path / "t.parquet", pyarrow_like)
    assert os.listdir(tmp_path) == []


def test_any_other_failure_also_removes_the_temporary_and_is_raised_unchanged(tmp_path: Path):
    def bad_data(temporary: Path) -> None:
        temporary.write_text("partial", encoding="utf-8")
        raise ValueError("not a table")

    with pytest.raises(ValueError, match="not a table"):
        write_atomically(tmp_path / "t.parquet", bad_data)
    assert os.listdir(tmp_path) == []


def test_several_files_are_replaced_all_or_none(tmp_path: Path):
    current, history = tmp_path / "t.parquet", tmp_path / "runs" / "t" / "run-1.parquet"  # a table's pair
    write_text_atomically(current, "old")

    def new(temporary: Path) -> None:
        temporary.write_text("new", encoding="utf-8")

    with pytest.raises(StorageError, match=f"^cannot write {history}: "):
        write_files_atomically([(current, new), (history, fills_the_disk)])
    assert current.read_text(encoding="utf-8") == "old"
    assert not history.exists()
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == ["t.parquet"]
    write_files_atomically([(current, new), (history, new)])
    assert current.read_text(encoding="utf-8") == history.read_text(encoding="utf-8") == "new"


def test_a_folder_that_cannot_be_made_is_named(tmp_path: Path):
    (tmp_path / "warehouse").write_text("a file where a folder should be", encoding="utf-8")
    folder = tmp_path / "warehouse" / "runs"
    with pytest.raises(StorageError) as failed:
        make_folder(folder)
    assert str(failed.value) == f"cannot create folder {folder}: [Errno 20] Not a directory"
    with pytest.raises(StorageError, match=f"^cannot create folder {folder}: "):
        write_text_atomically(folder / "x.json", "{}")


def test_a_folder_is_swapped_in_whole_or_not_at_all(tmp_path: Path):
    index = tmp_path / "bm25" / "fixed-60-0"

    def version(text: str) -> object:
        return lambda staging: (staging / "manifest.json").write_text(text, encoding="utf-8")

    replace_folder_atomically(index, version("old"))
    replace_folder_atomically(index, version("new"))
    assert (index / "manifest.json").read_text(encoding="utf-8") == "new"

    def half(staging: Path) -> None:
        (staging / "manifest.json").write_text("half", encoding="utf-8")
        fills_the_disk(staging / "bm25.npz")

    with pytest.raises(StorageError) as failed:
        replace_folder_atomically(index, half)
    assert str(failed.value) == f"cannot replace folder {index}: {NO_SPACE}: free space on that disk"
    assert (index / "manifest.json").read_text(encoding="utf-8") == "new"
    assert os.listdir(index.parent) == ["fixed-60-0"]  # no staging or retired folder


def test_the_error_carries_a_caller_s_remedy_and_survives_pickling():
    error = StorageError("/w/t.parquet", "write", NO_SPACE, "free space on that disk", errno.ENOSPC)
    more = error.or_else("point RAG_EVAL_WAREHOUSE_DIR elsewhere")
    assert str(more) == (
        f"cannot write /w/t.parquet: {NO_SPACE}: free space on that disk or point RAG_EVAL_WAREHOUSE_DIR elsewhere"
    )
    assert str(pickle.loads(pickle.dumps(more))) == str(more)
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC


@pytest.mark.slow
def test_every_writer_on_a_real_full_and_read_only_disk(tmp_path: Path):
    """Each writer of the project (text, JSONL, Parquet current + history, BM25 folder, embedding cache,
    local Qdrant) on a real tmpfs, filled up and then remounted read-only (faults/disk.py)."""
    require_private_mounts()
    folder = tmp_path / "disk"
    folder.mkdir()
    done = subprocess.run(
        [*UNSHARE, sys.executable, "-m", "rag_eval_pipeline_tests.faults.disk", str(folder)],
        cwd=REPO,  # `-m` finds the tests package from the working directory, whatever a test left it at
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    reasons = {"full": ("no space", "disk is full"), "read-only": ("read-only",)}
    for fault, words in reasons.items():
        for name, (_, reader, named) in WRITERS.items():
            result = results[f"{fault}/{name}"]
            where = f"{fault}/{name}: {result}"
            assert result["raised"] == "StorageError", where
            assert result["message"].startswith("cannot "), where
            assert f" {named(folder / name)}: " in result["message"], where
            assert any(word in result["message"].lower() for word in words), where
            assert result["leftovers"] == [], where
            assert result["intact"] is (True if reader is not None else None), where


def test_the_file_system_of_a_path_is_that_of_its_nearest_mount(tmp_path: Path):
    """From /proc/self/mountinfo: the longest mount point above the path (or above its nearest existing
    folder), its escaped spaces read back."""
    assert file_system_type(Path("/proc/self/status")) == "proc"
    require_private_mounts()
    folder = tmp_path / "a mount"  # mountinfo writes the space as \040
    folder.mkdir()
    probe = (
        "import sys; from pathlib import Path; from rag_eval_pipeline.core.store.files import file_system_type; "
        "print(file_system_type(Path(sys.argv[1]) / 'not' / 'made'), file_system_type(Path(sys.argv[1]).parent))"
    )
    done = subprocess.run(
        [
            *UNSHARE,
            "sh",
            "-c",
            'mount -t tmpfs tmpfs "$1" && exec "$2" -c "$3" "$1"',
            "sh",
            str(folder),
            sys.executable,
            probe,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tmpfs", str(file_system_type(tmp_path))]


def test_two_threads_writing_one_file_at_once_each_replace_it_whole(tmp_path: Path):
    """The threads of a Dask worker (and processes of two machines with one pid) write through their own
    temporary file: with one name per pid, the second writer truncated the first one's file, the first
    rename moved half of it in, and the second rename found nothing."""
    target = tmp_path / "table.parquet"
    start, both_open = threading.Barrier(2), threading.Barrier(2, timeout=30)
    failures: list[BaseException] = []

    def writer(letter: str) -> None:
        def slowly(temporary: Path) -> None:
            with open(temporary, "w", encoding="utf-8") as out:
                out.write(letter * 500)
                out.flush()
                both_open.wait()  # each writer holds its temporary file open, half written
                out.write(letter * 500)

        try:
            start.wait()
            write_atomically(target, slowly)
        except BaseException as exc:
            failures.append(exc)

    for _ in range(5):
        threads = [threading.Thread(target=writer, args=(letter,)) for letter in "AB"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert target.read_text(encoding="utf-8") in ("A" * 1000, "B" * 1000)
        assert os.listdir(tmp_path) == ["table.parquet"]
