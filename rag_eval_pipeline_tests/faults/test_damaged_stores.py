"""Damaged files in the stores `rag-eval` reads, through the commands a user runs: a history file cut
short, an embedding cache and the Dagster instance's storage overwritten. Each command exits 1 (a store
failed, not the user's input) with one message naming the file and what to do, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests.conftest import CliRunFactory
from rag_eval_pipeline_tests.faults.entry_points import rag_eval
from rag_eval_pipeline_tests.faults.test_run_faults import evaluation_id_of

pytestmark = pytest.mark.slow

SELECTION = ("--chunk-configs", "fixed-60-0", "--profiles", "top2")
RUN = ("run", *SELECTION)
TRACEBACK = "Traceback (most recent call last)"


@pytest.fixture
def evaluated(cli_run: CliRunFactory) -> tuple[Path, str]:
    """A copy of the tiny project after one evaluation (run once per worker), and its id; each test
    damages its own copy."""
    done = cli_run(*SELECTION)
    assert done.ran.returncode == 0, done.ran.stdout + done.ran.stderr
    return done.project, evaluation_id_of(done.ran.stdout)


def overwrite_after_first_page(database: Path) -> None:
    """Every page of a SQLite file but its header page overwritten (a disk or a copy gone wrong): SQLite
    opens it and finds the damage on the first read."""
    for leftover in (database.with_name(database.name + "-wal"), database.with_name(database.name + "-shm")):
        leftover.unlink(missing_ok=True)
    size = database.stat().st_size
    assert size > 4096, size
    with database.open("r+b") as file:
        file.seek(4096)
        file.write(bytes(range(256)) * ((size - 4096) // 256 + 1))


def output(done: object) -> str:
    return done.stdout + done.stderr  # type: ignore[attr-defined]


def test_a_history_file_cut_short_is_named_by_every_reader_with_what_to_do(
    evaluated: tuple[Path, str],
):
    project = evaluated[0]
    warehouse = Warehouse.in_project(project, {})
    (damaged,) = warehouse.history_files("retrieval_metrics")
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])  # a crash, a full disk
    remedy = (
        "move it out of the warehouse (the history then lacks that run's rows) or restore it from a backup"
    )
    for command in (
        ("results", evaluated[1]),
        ("query", "SELECT count(*) AS n FROM retrieval_metrics"),
    ):
        done = rag_eval(project, *command)
        said = output(done)
        assert done.returncode == 1, (command, said)
        assert TRACEBACK not in said, (command, said)
        assert f"error: cannot read {damaged}: " in said, (command, said)
        assert remedy in said, (command, said)


def test_a_damaged_embedding_cache_is_named_and_deleting_it_costs_only_re_embedding(
    evaluated: tuple[Path, str],
):
    project = evaluated[0]
    cache = project / "data" / "cache" / "embeddings.sqlite"
    overwrite_after_first_page(cache)
    done = rag_eval(project, *RUN, "--force")  # everything runs again, so the cache is read
    said = output(done)
    assert done.returncode == 1, said
    assert TRACEBACK not in said, said
    assert f"cannot read embedding cache {cache}: database disk image is malformed" in said, said
    assert "delete it (with its -wal and -shm files, if any): that costs only re-embedding the texts" in said

    cache.unlink()  # as the message says: the next run embeds again and succeeds
    again = rag_eval(project, *RUN, "--force")
    assert again.returncode == 0, output(again)


def test_damaged_dagster_storage_is_named_with_what_to_do(evaluated: tuple[Path, str]):
    project = evaluated[0]
    (runs,) = (project / ".dagster").rglob("runs.db")  # Dagster's SQLite run storage
    overwrite_after_first_page(runs)
    done = rag_eval(project, "list")
    said = output(done)
    assert done.returncode == 1, said
    assert TRACEBACK not in said, said
    assert f"error: cannot read Dagster storage {project / '.dagster' / 'storage'}: " in said, said
    assert "restore that folder from a backup, or move it away" in said, said
