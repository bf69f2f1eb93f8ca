"""Which run each partition is held to: a pinned baseline, or else the previous full run on the same data.

Pins live in the warehouse's ``baselines/baselines.json`` (written to a temporary name and renamed, under a
lock), one per chunk config x profile, with every change ever made kept in the same file, so a team can
see when and from what a baseline moved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from ..store.files import locked, write_text_atomically
from ..store.history import EvaluationId, HistoryError, HistoryStore, PartitionKey, RunId, RunRecord
from ..store.warehouse import Warehouse

BaselineSource = Literal["pinned", "previous_run", "none"]
_FORMAT = 1


@dataclass(frozen=True)
class Baseline:
    """A pinned baseline: the run (and its evaluation) a partition is held to."""

    partition: PartitionKey
    run_id: RunId
    evaluation_id: EvaluationId
    mode: str
    dataset_sha256: str
    pinned_at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class BaselineChange:
    at: str
    partition: PartitionKey
    run_id: RunId
    evaluation_id: EvaluationId
    replaced_run_id: RunId | None  # None: the partition had no pinned baseline before


class BaselineStore:
    def __init__(self, warehouse_dir: str | Path) -> None:
        self.path = Warehouse(Path(warehouse_dir)).baselines_path

    def pinned(self) -> tuple[Baseline, ...]:
        """Every pinned baseline, by partition."""
        return tuple(sorted(self._read()[0].values(), key=lambda b: b.partition))

    def get(self, partition: PartitionKey) -> Baseline | None:
        return self._read()[0].get(partition)

    def changes(self) -> tuple[BaselineChange, ...]:
        """Every pin ever made, oldest first."""
        return tuple(self._read()[1])

    def pin(self, runs: Sequence[RunRecord], at: datetime | None = None) -> tuple[BaselineChange, ...]:
        """Pin each run as its partition's baseline (replacing any earlier pin); re-pinning the run a
        partition already has changes nothing and records nothing."""
        stamp = (at or datetime.now(UTC)).astimezone(UTC).isoformat()
        with locked(self.path):  # two `baseline set` at once must not lose a pin
            baselines, changes = self._read()
            made = []
            for run in runs:
                before = baselines.get(run.partition)
                if before is not None and before.run_id == run.run_id:
                    continue
                baselines[run.partition] = Baseline(
                    run.partition, run.run_id, run.evaluation_id, run.mode, run.dataset_sha256, stamp
                )
                made.append(
                    BaselineChange(
                        stamp, run.partition, run.run_id, run.evaluation_id, before.run_id if before else None
                    )
                )
            if made:
                self._write(baselines, [*changes, *made])
        return tuple(made)

    def pin_ref(
        self, history: HistoryStore, ref: str, partition: PartitionKey | None = None
    ) -> tuple[tuple[RunRecord, ...], tuple[BaselineChange, ...]]:
        """`baseline set REF [--partition P]` (and ``POST /baselines``): the runs of the evaluation or run
        ``ref`` names (only ``partition``'s when given) pinned; returns them and the changes made."""
        resolved = history.resolve(ref)
        runs = resolved.runs
        if partition is not None:
            runs = tuple(r for r in runs if r.partition == partition)
            if not runs:
                raise HistoryError(
                    f"{resolved.describe()} did not evaluate {partition}; it has "
                    f"{', '.join(map(str, resolved.partitions))}"
                )
        return runs, self.pin(runs)

    def _read(self) -> tuple[dict[PartitionKey, Baseline], list[BaselineChange]]:
        if not self.path.exists():
            return {}, []
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            baselines = {}
            for raw in document["baselines"]:
                baseline = Baseline(**{**raw, "partition": PartitionKey(**raw["partition"])})
                baselines[baseline.partition] = baseline
            changes = [
                BaselineChange(**{**raw, "partition": PartitionKey(**raw["partition"])})
                for raw in document["changes"]
            ]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{self.path} is not a baselines file ({type(exc).__name__}: {exc}); restore it from version "
                "control, or delete it and pin the baselines again with `rag-eval baseline set`"
            ) from None
        return baselines, changes

    def _write(self, baselines: dict[PartitionKey, Baseline], changes: list[BaselineChange]) -> None:
        document: dict[str, Any] = {
            "format": _FORMAT,
            "baselines": [asdict(baselines[p]) for p in sorted(baselines)],
            "changes": [asdict(c) for c in changes],
        }
        write_text_atomically(self.path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class BaselineChoice:
    """The run a new run is compared with, where it came from and why (shown in the check's metadata).
    ``run`` is None when there is nothing to compare with, or a pinned run has no rows in the table."""

    source: BaselineSource
    run: RunRecord | None
    detail: str


def choose_baseline(
    history: HistoryStore,
    store: BaselineStore,
    table: str,
    partition: PartitionKey,
    run_id: str,
    dataset_sha256: str,
    created_at: datetime,
    answers_sha256: str | None = None,
) -> BaselineChoice:
    """The pinned baseline of the partition if there is one (its run's rows in ``table``, else the
    latest run of its evaluation there); otherwise the most recent earlier full-mode run of the partition
    on the same dataset (and the same reference answers, when given); otherwise none. The run being
    checked is never its own baseline, even when its evaluation is the one pinned.

    ``history`` may be a store of ``partition`` alone (``HistoryStore(base, partition=...)``): every
    candidate is a run of that partition, so the choice is the same and reads no other partition."""
    if history.partition is not None and history.partition != partition:
        raise ValueError(
            f"a history of partition {history.partition} cannot choose the baseline of {partition}"
        )
    pinned = store.get(partition)
    if pinned is not None and pinned.run_id != run_id:
        run = history.find_run(pinned.run_id, (table,))
        if run is not None:
            return BaselineChoice("pinned", run, f"pinned on {pinned.pinned_at} in {store.path}")
        latest = history.latest_run_of(table, pinned.evaluation_id, partition)
        if latest is not None and latest.run_id != run_id:
            return BaselineChoice(
                "pinned",
                latest,
                f"pinned evaluation {pinned.evaluation_id} (run {pinned.run_id} wrote no {table} rows; "
                f"its run {latest.run_id} did)",
            )
        return BaselineChoice(
            "pinned",
            None,
            f"the pinned baseline run {pinned.run_id} (evaluation {pinned.evaluation_id}) has no rows in "
            f"{table}: retention may have removed them; pin another with `rag-eval baseline set`",
        )
    previous = history.previous_full_run(table, partition, dataset_sha256, created_at, run_id, answers_sha256)
    if previous is not None:
        return BaselineChoice(
            "previous_run",
            previous,
            f"no pinned baseline: the previous full run of {partition} on dataset {dataset_sha256}",
        )
    return BaselineChoice(
        "none",
        None,
        f"no pinned baseline and no earlier full run of {partition} on dataset {dataset_sha256}: "
        "this run is the first reference",
    )
