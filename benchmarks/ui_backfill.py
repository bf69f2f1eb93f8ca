"""Benchmark: a chunk config evaluated from the Dagster UI against the same work from the CLI (issue 16:
"UI backfills and automation as fast as the CLI for the same work (within 1.5x)").

In a scratch workspace under /tmp (made as benchmarks/end_to_end.py makes one: rag-eval.yaml and
dagster.yaml as `rag-eval init` writes them, a copy of the repository's data/ settings, corpus and
datasets, its own warehouse, caches and Dagster instance) a chunk config is added (``bench-ui-400-50``,
the settings of recursive-400-50 under a new name) and evaluated once from the CLI, which fills the
embedding cache: every measured variant then embeds the same (nothing). Then `rag-eval ui` (`dagster
dev` on the workspace) is started, its sensors stopped ("by hand in the UI" of docs/chunk-configs.md, so
automation does not launch runs of its own), and these variants re-materialize the same partitions, interleaved:

- ``cli``: `rag-eval run --force --chunk-configs X` in a child process: every run in that one process
  (runner/in_process.py);
- ``ui``: what "by hand in the UI" (docs/chunk-configs.md) does, through the same GraphQL mutations the UI sends:
  ingestion_job (a run: `--force` re-runs it too), then a backfill of chunking_job for X
  (`launchPartitionBackfill`, the job's partition set), then a backfill of evaluation_job for X's
  partitions, then leaderboard_job (a run); each stage once the one before has finished;
- ``launch``: `rag-eval run --launch URL --force --chunk-configs X`: the same runs submitted through
  GraphQL (`launchRun`) stage by stage (runner/launch.py), no backfill daemon.

For every variant: the wall time, and where each Dagster run's time went, from the run's events on the
instance (public API): queued (RUN_ENQUEUED to RUN_STARTING), process start (RUN_STARTING to RUN_START:
a fresh process importing the code location), setup (RUN_START to the first STEP_START), steps (the sum
of STEP_START to STEP_SUCCESS), rest (to the run's end: events, IO between steps, teardown); and the
time no run of the variant existed ("between runs": the backfill daemon's and the CLI's own time).

    python benchmarks/ui_backfill.py [--quick] [--repeats N] [--variants cli,ui,launch] [--keep] [--data DIR]
                                     [--synchronous-backfills]

``--data DIR`` takes the settings, corpus and datasets from another folder laid out like data/ (the
tests' smoke run uses a tiny one). A backfill's runs are submitted by Dagster's backfill daemon, which
looks for new backfills every 30 s (fixed in Dagster 1.13: not a dagster.yaml setting), so each of the
``ui`` variant's two backfills waits 0-30 s for it; ``--synchronous-backfills`` has the webserver submit
them at once instead (Dagster's ``forceSynchronousSubmission``, meant for tests, which the UI never sends):
the smoke test's way to skip that wait, whose ``ui`` figures then leave out the daemon's cost.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

from end_to_end import child_environment, machine_facts, make_workspace  # noqa: E402

from rag_eval_pipeline_tests.dagster_dev import (  # noqa: E402
    free_port,
    restore_default_signals,
    stop,
    wait_until_served,
)

ADDED_CONFIG = "bench-ui-400-50"
QUICK_PROFILES = ("dense-top5", "hybrid-top5")
VARIANTS = ("cli", "ui", "launch")
SENSORS = ("automation_sensor", "partition_sync_sensor", "document_sensor")
PHASES = ("queued", "process start", "setup", "steps", "rest")
POLL_S = 0.5
STAGE_TIMEOUT_S = 900.0

_SENSOR_QUERY = """
query Sensor($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) { __typename ... on Sensor { id } ... on Error { message } }
}
"""
_STOP_SENSOR = """
mutation Stop($id: String) { stopSensor(id: $id) { __typename ... on Error { message } } }
"""
_BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}
"""
_BACKFILL_STATUS = """
query BackfillStatus($id: String!) {
  partitionBackfillOrError(backfillId: $id) { __typename ... on PartitionBackfill { status } }
}
"""
_RUNS_OF_BACKFILL = """
query BackfillRuns($id: String!) {
  runsOrError(filter: {tags: [{key: "dagster/backfill", value: $id}]}) {
    __typename ... on Runs { results { runId status } }
  }
}
"""
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


# ---------------------------------------------------------------------------------------------------
# the workspace


def add_chunk_config(workspace: Path) -> str:
    """Appends ``ADDED_CONFIG`` (recursive, 400/50) to the workspace's chunk configs, as its last entry."""
    path = workspace / "data" / "chunk_configs.yaml"
    text = path.read_text(encoding="utf-8")
    indent = re.findall(r"^( *)- name:", text, flags=re.MULTILINE)[-1]
    entry = (
        f"{indent}- name: {ADDED_CONFIG}\n{indent}  chunker: recursive\n"
        f"{indent}  chunk_size: 400\n{indent}  chunk_overlap: 50\n"
    )
    path.write_text(text.rstrip("\n") + "\n" + entry, encoding="utf-8")
    return ADDED_CONFIG


def set_dequeue_interval(dagster_yaml: Path, seconds: int) -> None:
    """The run queue's dequeue interval in a dagster.yaml (0: no setting, Dagster's default)."""
    text = re.sub(r"^run_queue:\n(?:  .*\n)+", "", dagster_yaml.read_text(encoding="utf-8"), flags=re.M)
    if seconds:
        text += f"run_queue:\n  dequeue_interval_seconds: {seconds}\n"
    dagster_yaml.write_text(text, encoding="utf-8")


def rag_eval(workspace: Path, args: Sequence[str], log: Path) -> float:
    """`rag-eval --workspace W ARGS` in a child process; its wall time."""
    command = [sys.executable, "-m", "rag_eval_pipeline", "--workspace", str(workspace), *args]
    start = time.perf_counter()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n=== {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(
            command, cwd=workspace, stdout=out, stderr=subprocess.STDOUT, env=child_environment()
        )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8").splitlines()[-30:]
        raise SystemExit(f"`rag-eval {' '.join(args)}` failed ({done.returncode}):\n" + "\n".join(tail))
    return wall


# ---------------------------------------------------------------------------------------------------
# the UI


@contextmanager
def running_ui(workspace: Path, log: Path) -> Iterator[str]:
    """`rag-eval ui`'s `dagster dev` on the workspace (its command and code-location file), started from
    Python with default signal handlers, stopped by PID."""
    from rag_eval_pipeline.runner.ui import code_locations_yaml, ui_command

    command = ui_command(workspace, port=free_port(), environ=child_environment())
    command.code_locations.parent.mkdir(parents=True, exist_ok=True)
    command.code_locations.write_text(code_locations_yaml(), encoding="utf-8")
    with log.open("ab") as out:
        process = subprocess.Popen(
            command.args,
            cwd=command.cwd,
            env=dict(command.env),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=restore_default_signals,
            start_new_session=True,
        )
    try:
        wait_until_served(command.url, process, 300.0)
        yield command.url
    finally:
        stop(process)


class UI:
    """What the UI sends: GraphQL through runner/launch.py's client."""

    def __init__(self, url: str, synchronous_backfills: bool = False) -> None:
        from rag_eval_pipeline.runner.launch import DagsterWebserver

        self.api = DagsterWebserver(url)
        self.synchronous_backfills = synchronous_backfills
        self.repository = self.api.repository_with(["chunking_job", "evaluation_job"])

    def stop_sensors(self) -> None:
        for name in SENSORS:
            selector = {**self.repository.selector(), "sensorName": name}
            sensor = self.api.query(_SENSOR_QUERY, {"selector": selector})["sensorOrError"]
            assert sensor["__typename"] == "Sensor", sensor
            answer = self.api.query(_STOP_SENSOR, {"id": sensor["id"]})["stopSensor"]
            assert answer["__typename"] == "StopSensorMutationResult", answer

    def run(self, job_name: str) -> None:
        """Launchpad → Launch run (an unpartitioned job), waited for."""
        run_id = self.api.launch(self.repository, job_name, {}, {})
        self.wait([run_id])

    def backfill(self, job_name: str, partitions: Sequence[str]) -> None:
        """Jobs → JOB → Materialize → partitions: a backfill of the job's partition set (the backfill
        daemon submits its runs), waited for."""
        params = {
            "selector": {
                "partitionSetName": f"{job_name}_partition_set",
                "repositorySelector": self.repository.selector(),
            },
            "partitionNames": list(partitions),
            # the webserver submits the runs, not the backfill daemon at its next look (tests only)
            **({"forceSynchronousSubmission": True} if self.synchronous_backfills else {}),
        }
        answer = self.api.query(_BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert answer["__typename"] == "LaunchBackfillSuccess", answer
        backfill_id = answer["backfillId"]
        deadline = time.monotonic() + STAGE_TIMEOUT_S
        while time.monotonic() < deadline:
            status = self.api.query(_BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]
            runs = self.api.query(_RUNS_OF_BACKFILL, {"id": backfill_id})["runsOrError"]["results"]
            if status.get("status") in ("FAILED", "CANCELED", "COMPLETED_FAILED"):
                raise SystemExit(f"backfill {backfill_id} of {job_name}: {status}")
            # done when every partition's run has ended, as the UI's runs list shows it (the backfill's
            # own status turns COMPLETED_SUCCESS only at the backfill daemon's next tick)
            if len(runs) == len(partitions) and all(r["status"] in TERMINAL for r in runs):
                failed = [r["runId"] for r in runs if r["status"] != "SUCCESS"]
                assert not failed, f"backfill {backfill_id}: runs {failed} failed"
                return
            time.sleep(POLL_S)
        raise SystemExit(f"backfill {backfill_id} of {job_name} did not end in {STAGE_TIMEOUT_S:.0f} s")

    def wait(self, run_ids: Sequence[str]) -> None:
        deadline = time.monotonic() + STAGE_TIMEOUT_S
        while time.monotonic() < deadline:
            statuses = self.api.statuses(run_ids)
            if all(s.value in TERMINAL for s in statuses.values()):
                failed = [r for r, s in statuses.items() if s.value != "SUCCESS"]
                assert not failed, f"runs {failed} failed"
                return
            time.sleep(POLL_S)
        raise SystemExit(f"runs {run_ids} did not end in {STAGE_TIMEOUT_S:.0f} s")

    def materialize_config(self, chunk_config: str, profiles: Sequence[str]) -> None:
        self.run("ingestion_job")
        self.backfill("chunking_job", [chunk_config])
        self.backfill("evaluation_job", [f"{chunk_config}|{p}" for p in profiles])
        self.run("leaderboard_job")


# ---------------------------------------------------------------------------------------------------
# where the runs' time went


@dataclass
class RunTimes:
    job: str
    created: float
    ended: float
    phases: dict[str, float]


@dataclass
class VariantRun:
    variant: str
    wall: float
    runs: list[RunTimes] = field(default_factory=list)
    between: float = 0.0  # wall time in which no run of the variant existed

    def phase(self, name: str) -> float:
        return sum(r.phases[name] for r in self.runs)

    def between_runs(self, started: float) -> float:
        """Wall time in which no run of the variant existed (before, between and after them)."""
        covered, cursor = 0.0, started
        for run in sorted(self.runs, key=lambda r: r.created):
            start, end = max(run.created, cursor), max(run.ended, cursor)
            covered += end - start
            cursor = end
        return max(self.wall - covered, 0.0)


def run_times(workspace: Path, since: float) -> list[RunTimes]:
    """Every run created on the workspace's instance since ``since`` (a Unix time), with its phases."""
    import dagster as dg

    from rag_eval_pipeline.runner.instance import project_instance

    kinds = dg.DagsterEventType
    here = os.getcwd()
    os.chdir(workspace)  # the instance's storage paths are relative to the workspace
    try:
        with project_instance(workspace) as instance:
            records = instance.get_run_records(
                dg.RunsFilter(created_after=dt.datetime.fromtimestamp(since, dt.UTC))
            )
            found = []
            for record in records:
                at: dict[Any, float] = {}
                steps, step_started = 0.0, {}
                for entry in instance.all_logs(record.dagster_run.run_id):
                    kind = entry.dagster_event_type
                    if kind is None:
                        continue
                    at.setdefault(kind, entry.timestamp)
                    if kind == kinds.STEP_START:
                        step_started[entry.step_key] = entry.timestamp
                    elif kind in (kinds.STEP_SUCCESS, kinds.STEP_FAILURE) and entry.step_key in step_started:
                        steps += entry.timestamp - step_started.pop(entry.step_key)
                created = record.create_timestamp.timestamp()
                ended = record.end_time or created
                starting = at.get(kinds.RUN_STARTING, created)
                started = at.get(kinds.RUN_START, starting)
                first_step = at.get(kinds.STEP_START, started)
                found.append(
                    RunTimes(
                        record.dagster_run.job_name,
                        created,
                        ended,
                        {
                            "queued": starting - created,
                            "process start": started - starting,
                            "setup": first_step - started,
                            "steps": steps,
                            "rest": max(ended - first_step - steps, 0.0),
                        },
                    )
                )
            return found
    finally:
        os.chdir(here)


def measure(variant: str, workspace: Path, action: Callable[[], object]) -> VariantRun:
    started = time.time()
    start = time.perf_counter()
    action()
    result = VariantRun(variant, time.perf_counter() - start)
    time.sleep(0.5)  # the last run's end is recorded by its own process
    result.runs = run_times(workspace, started)
    result.runs.sort(key=lambda r: r.created)
    result.between = result.between_runs(started)
    return result


# ---------------------------------------------------------------------------------------------------
# printing


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def variant_line(run: VariantRun) -> str:
    phases = ", ".join(f"{name} {run.phase(name):5.1f}" for name in PHASES)
    return (
        f"{run.variant:<7} wall {run.wall:6.1f} s | {len(run.runs):2d} runs | summed over runs: {phases} | "
        f"between runs {run.between:5.1f} s"
    )


def summary(results: dict[str, list[VariantRun]], repeats: int) -> None:
    print(f"\nSummary: medians of {repeats} repeat(s), interleaved")
    header = f"{'variant':<8}{'wall s':>8}{'x cli':>7}{'runs':>6}" + "".join(f"{p:>15}" for p in PHASES)
    header += f"{'between runs':>14}"
    print(header)
    print("-" * len(header))
    cli = median([r.wall for r in results.get("cli", [])])
    for variant, runs in results.items():
        wall = median([r.wall for r in runs])
        line = f"{variant:<8}{wall:8.1f}" + (f"{wall / cli:6.2f}x" if cli else f"{'-':>7}")
        line += f"{median([len(r.runs) for r in runs]):6.0f}"
        line += "".join(f"{median([r.phase(p) for r in runs]):15.1f}" for p in PHASES)
        line += f"{median([r.between for r in runs]):14.1f}"
        print(line)
    print("\nPer run (medians over the variant's runs of every repeat, by job)")
    for variant, runs in results.items():
        by_job: dict[str, list[RunTimes]] = {}
        for run in (r for v in runs for r in v.runs):
            by_job.setdefault(run.job, []).append(run)
        for job, times in sorted(by_job.items()):
            phases = ", ".join(f"{p} {median([t.phases[p] for t in times]):4.1f}" for p in PHASES)
            total = median([t.ended - t.created for t in times])
            print(f"  {variant:<7}{job:<17} {total:5.1f} s: {phases}")
    if cli:
        for variant in (v for v in results if v != "cli"):
            wall = median([r.wall for r in results[variant]])
            print(f"{variant} / cli {wall / cli:.2f}x (goal <= 1.5x)")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument("--quick", action="store_true", help=f"only the profiles {', '.join(QUICK_PROFILES)}")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of cli,ui,launch")
    parser.add_argument(
        "--dequeue-interval",
        type=int,
        help="the workspace's run_queue dequeue_interval_seconds (default: as `rag-eval init` writes it; "
        "0 removes the setting: Dagster's default, 5 s)",
    )
    parser.add_argument(
        "--synchronous-backfills",
        action="store_true",
        help="the webserver submits each backfill's runs at once (Dagster's forceSynchronousSubmission, "
        "meant for tests; the UI never sends it), not the backfill daemon at its next 30-s look: the "
        "`ui` figures then leave out that wait",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (with runs.log)")
    parser.add_argument(
        "--data",
        type=Path,
        default=REPO / "data",
        help="a folder laid out like data/ (settings files, corpus/, datasets/): default the bundled demo",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    assert set(variants) <= set(VARIANTS), f"unknown variant in {variants}"
    from rag_eval_pipeline.core.settings.configs import load_profiles

    data: Path = args.data.resolve()
    profiles: list[str] = [p.name for p in load_profiles(data / "retrieval_profiles.yaml")]
    if args.quick:
        profiles = list(QUICK_PROFILES)
    scratch = Path(tempfile.mkdtemp(prefix="rag-eval-ui-backfill-", dir="/tmp"))
    log = scratch / "runs.log"
    workspace = make_workspace(scratch / "workspace", data)
    chunk_config = add_chunk_config(workspace)
    if args.dequeue_interval is not None:
        set_dequeue_interval(workspace / "dagster.yaml", args.dequeue_interval)
    selection = ["--chunk-configs", chunk_config, "--profiles", ",".join(profiles)]
    print(
        f"UI backfill benchmark: chunk config {chunk_config} x {len(profiles)} profile(s) "
        f"({', '.join(profiles)}), variants {', '.join(variants)}, {args.repeats} repeat(s)"
    )
    print(machine_facts())
    dagster_yaml = (workspace / "dagster.yaml").read_text(encoding="utf-8")
    queue = re.findall(r"^\s*(dequeue_interval_seconds|max_concurrent_runs): *(\S+)", dagster_yaml, re.M)
    print(f"workspace dagster.yaml: {', '.join(f'{k} {v}' for k, v in queue) or 'run queue defaults'}")
    print(
        "backfills: submitted by the webserver at once (--synchronous-backfills: no backfill daemon wait, "
        "not what the UI does)"
        if args.synchronous_backfills
        else "backfills: submitted by the backfill daemon (it looks every 30 s)"
    )
    print(f"scratch {scratch} (run output in {log.name})")
    setup = rag_eval(workspace, ["run", *selection], log)
    print(f"setup: `rag-eval run` of {chunk_config} (fills the caches) {setup:.1f} s")
    results: dict[str, list[VariantRun]] = {v: [] for v in variants}
    with running_ui(workspace, log) as url:
        ui = UI(url, args.synchronous_backfills)
        ui.stop_sensors()
        actions: dict[str, Callable[[], object]] = {
            "cli": lambda: rag_eval(workspace, ["run", "--force", *selection], log),
            "ui": lambda: ui.materialize_config(chunk_config, profiles),
            "launch": lambda: rag_eval(workspace, ["run", "--launch", url, "--force", *selection], log),
        }
        for repeat in range(args.repeats):
            print(f"\nrepeat {repeat + 1}/{args.repeats}")
            order = variants[repeat % len(variants) :] + variants[: repeat % len(variants)]
            for variant in order:
                result = measure(variant, workspace, actions[variant])
                results[variant].append(result)
                print(variant_line(result), flush=True)
    summary(results, args.repeats)
    if args.keep:
        print(f"\nkept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
