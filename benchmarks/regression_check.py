"""Benchmark: what one regression check pays to choose its baseline and read its rows, as history grows.

A regression check (asset checks on ``retrieval_metrics`` and ``answer_metrics``) chooses the baseline
of its partition (``core/baselines.choose_baseline``) and reads that run's per-question rows
(``HistoryStore.question_rows``). This script builds a synthetic warehouse history of 100, 1,000 and
4,000 ``retrieval_metrics`` run files (by default), written by the warehouse's own writer
(``Warehouse.write_history``, the writer behind the IO manager) with the columns the asset writes. The
history grows by partitions (more chunk configs x profiles, each with ``--runs-per-partition`` runs), so
the checked partition's own history stays the same size. The first runs of every partition predate the
evaluation columns (``evaluation_id``/``evaluation_mode``), as in an old warehouse. Each file is dated
a minute after its run started, as a materialization dates it (the partition store looks for the
previous run in the newest files first).

For each size it times, interleaved, medians of ``--repeats`` runs:

- ``whole``: the store over every history file of the table (``HistoryStore(base)``: the path every
  check took before; still what `rag-eval history` and `compare` use),
- ``partition``: the store of the checked partition alone (``HistoryStore(base, partition=...)``: what
  the check uses now),

checks that both choose the same baseline run and read the same rows, then prints the growth ratio of
the largest history against the smallest (goal for the partition store: about 1x, flat). A last line
grows the checked partition's own history instead (``--own-growth`` times as many runs): the partition
store reads its newest files first and stops at the previous run, so its cost stays about flat there too.

    python benchmarks/regression_check.py [--sizes 100,1000,4000] [--runs-per-partition 20]
        [--questions 100] [--repeats 5] [--own-growth 10] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import duckdb
import numpy as np
import pandas as pd

from rag_eval_pipeline.core.evaluation.baselines import BaselineStore, choose_baseline
from rag_eval_pipeline.core.metrics.names import TOKEN_LEVEL_METRICS
from rag_eval_pipeline.core.store.history import HistoryStore, PartitionKey
from rag_eval_pipeline.core.store.warehouse import Warehouse

TABLE = "retrieval_metrics"
CHECKED = PartitionKey("checked-400-50", "dense-top5")
DATASET = "d" * 64
T0 = datetime(2026, 1, 1, tzinfo=UTC)
UNTAGGED_RUNS = 2  # the first runs of each partition: written before the evaluation columns existed


def run_rows(partition: PartitionKey, run_index: int, questions: int) -> pd.DataFrame:
    """One run's per-question rows with the retrieval_metrics asset's columns (provenance, then metrics);
    values are seeded by partition and run, so every build is the same."""
    run_id = f"{partition.chunk_config}.{partition.profile}.run-{run_index:05d}"
    seed = sum(map(ord, str(partition))) * 100_003 + run_index
    rng = np.random.default_rng(seed)
    provenance: dict[str, Any] = {"run_id": run_id}
    if run_index >= UNTAGGED_RUNS:
        provenance["evaluation_id"] = f"eval-{run_index:05d}"
        provenance["evaluation_mode"] = "quick" if run_index % 5 == 4 else "full"
    provenance.update(
        {
            "created_at": pd.Timestamp(T0 + timedelta(hours=run_index, seconds=seed % 600)),
            "chunk_config": partition.chunk_config,
            "profile": partition.profile,
            "top_k": 5,
            "chunk_config_hash": f"{seed:016x}",
            "profile_hash": f"{seed + 1:016x}",
            "profile_version": "1",
            "retrievers": "knn",
            "embedder_model_id": "sentence-transformers/all-MiniLM-L6-v2",
            "corpus_sha256": "c" * 64,
            "dataset_sha256": DATASET,
            "retrieval_run_id": run_id,
            "n_stale_questions": 0,
            "question_generators": "golden",
            "experiment_url": "",
        }
    )
    frame = pd.DataFrame(
        {
            "question_id": [f"q{i:04d}" for i in range(questions)],
            "group": [f"group-{i % 4}" for i in range(questions)],
            **{metric: rng.random(questions) for metric in TOKEN_LEVEL_METRICS},
        }
    )
    return frame.assign(**provenance)


@dataclass
class History:
    """The synthetic warehouse, grown in place: partitions are added until it holds the wanted files."""

    warehouse: Warehouse
    questions: int
    runs_per_partition: int
    files: int = 0
    partitions: int = 0

    def write_partition(self, partition: PartitionKey, runs: range) -> None:
        for index in runs:
            frame = run_rows(partition, index, self.questions)
            path = self.warehouse.write_history(
                frame, TABLE, partition.dimensions(), str(frame["run_id"].iloc[0])
            )
            # dated as a materialization dates it: written when its run ends, a minute after it started
            written = (pd.Timestamp(frame["created_at"].iloc[0]) + timedelta(minutes=1)).timestamp()
            os.utime(path, (written, written))
            self.files += 1

    def grow_to(self, files: int) -> None:
        if self.partitions == 0:
            self.write_partition(CHECKED, range(self.runs_per_partition))
            self.partitions = 1
        while self.files < files:
            partition = PartitionKey(f"config-{self.partitions:04d}", f"profile-{self.partitions % 7}")
            self.write_partition(partition, range(min(self.runs_per_partition, files - self.files)))
            self.partitions += 1


@dataclass(frozen=True)
class CheckRead:
    baseline_run_id: str
    rows: pd.DataFrame


def check_read(base: Path, now_index: int, scoped: bool) -> CheckRead:
    """What a check of CHECKED's run ``now_index`` reads: its baseline choice and that run's rows."""
    now = run_rows(CHECKED, now_index, 1).iloc[0]
    with HistoryStore(base, partition=CHECKED if scoped else None) as history:
        choice = choose_baseline(
            history,
            BaselineStore(base),
            TABLE,
            CHECKED,
            str(now["run_id"]),
            DATASET,
            pd.Timestamp(now["created_at"]).to_pydatetime(),
        )
        assert choice.run is not None, choice.detail
        rows = history.question_rows(TABLE, [choice.run])
    return CheckRead(choice.run.run_id, rows)


def same_read(a: CheckRead, b: CheckRead) -> bool:
    if a.baseline_run_id != b.baseline_run_id or set(a.rows.columns) != set(b.rows.columns):
        return False
    columns = sorted(a.rows.columns)
    left = a.rows[columns].sort_values("question_id").reset_index(drop=True)
    right = b.rows[columns].sort_values("question_id").reset_index(drop=True)
    return bool(left.equals(right))


def median_seconds(
    calls: dict[str, Callable[[], object]], repeats: int
) -> tuple[dict[str, float], dict[str, object]]:
    """Each call ``repeats`` times, interleaved (a burst of load hits both alike); medians, last results."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    results: dict[str, object] = {}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            results[name] = call()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, results


def machine_facts() -> str:
    return (
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, DuckDB {duckdb.__version__}, "
        f"{platform.system()} {platform.release()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def run(
    sizes: Sequence[int],
    runs_per_partition: int,
    questions: int,
    repeats: int,
    own_growth: int,
    folder: Path,
    out: TextIO,
) -> dict[int, dict[str, float]]:
    print(machine_facts(), file=out)
    print(
        f"history: {TABLE} run files of {questions} questions, {runs_per_partition} runs per partition; "
        f"checked partition {CHECKED}; medians of {repeats} interleaved runs",
        file=out,
    )
    history = History(Warehouse(folder), questions, runs_per_partition)
    now_index = runs_per_partition - 1  # the checked run: the partition's latest
    medians: dict[int, dict[str, float]] = {}
    header = f"{'files':>7} {'partitions':>10} {'write s':>8} {'whole s':>9} {'partition s':>12} {'whole/partition':>16}  same baseline and rows"
    print(header, file=out)
    print("-" * len(header), file=out)
    for size in sorted(sizes):
        start = time.perf_counter()
        history.grow_to(size)
        written = time.perf_counter() - start
        times, results = median_seconds(
            {
                "whole": lambda: check_read(folder, now_index, scoped=False),
                "partition": lambda: check_read(folder, now_index, scoped=True),
            },
            repeats,
        )
        whole, scoped = results["whole"], results["partition"]
        assert isinstance(whole, CheckRead) and isinstance(scoped, CheckRead)
        same = same_read(whole, scoped)
        medians[history.files] = times
        print(
            f"{history.files:>7,} {history.partitions:>10,} {written:>8.1f} {times['whole']:>9.3f} "
            f"{times['partition']:>12.3f} {times['whole'] / times['partition']:>15.1f}x  "
            f"{'yes' if same else 'NO'} (baseline {scoped.baseline_run_id}, {len(scoped.rows)} rows)",
            file=out,
        )
    smallest, largest = min(medians), max(medians)
    for name in ("whole", "partition"):
        ratio = medians[largest][name] / medians[smallest][name]
        print(
            f"growth {largest:,}/{smallest:,} files, {name + ' store:':<17} {ratio:5.2f}x "
            f"({medians[smallest][name]:.3f} s -> {medians[largest][name]:.3f} s)",
            file=out,
        )
    if own_growth > 1:
        own_runs = runs_per_partition * own_growth
        history.write_partition(CHECKED, range(runs_per_partition, own_runs))
        times, _ = median_seconds(
            {"partition": lambda: check_read(folder, own_runs - 1, scoped=True)}, repeats
        )
        before = medians[largest]["partition"]
        print(
            f"own history {runs_per_partition} -> {own_runs} runs of the checked partition "
            f"({history.files:,} files), partition store: {before:.3f} s -> {times['partition']:.3f} s "
            f"({times['partition'] / before:.2f}x)",
            file=out,
        )
    return medians


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes", default="100,1000,4000", help="history sizes in run files (default %(default)s)"
    )
    parser.add_argument("--runs-per-partition", type=int, default=20)
    parser.add_argument("--questions", type=int, default=100, help="questions per run file")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--own-growth",
        type=int,
        default=10,
        help="then grow the checked partition's runs this many times (1: skip)",
    )
    parser.add_argument("--dir", type=Path, help="build the warehouse here (default: a temporary folder)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if not sizes or min(sizes) < args.runs_per_partition or args.runs_per_partition < 2 or args.repeats < 1:
        parser.error("sizes must be at least --runs-per-partition (>= 2), repeats at least 1")
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        if any(args.dir.iterdir()):
            parser.error(f"{args.dir} is not empty: give an empty or new folder")
        run(
            sizes,
            args.runs_per_partition,
            args.questions,
            args.repeats,
            args.own_growth,
            args.dir,
            sys.stdout,
        )
        return 0
    with tempfile.TemporaryDirectory(prefix="regression-check-bench-") as folder:
        run(
            sizes,
            args.runs_per_partition,
            args.questions,
            args.repeats,
            args.own_growth,
            Path(folder),
            sys.stdout,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
