"""History retention: per-question rows are kept whole for ``full_rows_days``, then cut to a seeded
sample of ``sampled_rows`` rows per file until ``sampled_rows_days``, then deleted; aggregates (the
``*_summary`` tables, the leaderboard, the calibration and index manifests) are kept forever, so every
run's means and confidence intervals stay comparable.

Planning reads only Parquet footers and the ``created_at`` column and changes nothing (the dry run);
applying rewrites files atomically and keeps their modification time. A sampled file carries a mark in
its Parquet metadata and is never sampled again, so applying twice changes nothing the second time.

Generated datasets (``datasets/**/history/*.jsonl``) are kept whole: they are the inputs the history was
computed on (``dataset_sha256``), a sample of one would be a different dataset, and they are small.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..settings.monitoring_settings import RetentionSettings
from ..text_table import markdown_table
from .files import storage_error, write_atomically
from .warehouse import Warehouse

Action = Literal["keep", "sample", "delete"]
AgeSource = Literal["created_at", "mtime", "none"]

# Besides every `*_summary` table: one row per run or per method, aggregates themselves.
AGGREGATE_TABLES = frozenset({"leaderboard", "answer_calibration", "chunk_index", "question_set_health"})
# Rows are sampled by whole keys (a question keeps all its ranked chunks), the first column present.
SAMPLE_KEYS = ("question_id", "chunk_id", "doc_id")
MARK = b"rag_eval.retention"
DAY_SECONDS = 86_400.0


def is_aggregate(table: str) -> bool:
    return table.endswith("_summary") or table in AGGREGATE_TABLES


@dataclass(frozen=True)
class FileDecision:
    path: Path
    table: str  # history/<table>/..., or datasets/<name> for the JSONL history
    action: Action
    reason: str
    age_days: float  # NaN for files whose age does not matter (aggregates, datasets)
    age_from: AgeSource
    rows: int
    rows_after: int
    bytes: int


@dataclass(frozen=True)
class RetentionPlan:
    warehouse_dir: Path
    settings: RetentionSettings
    now: datetime
    decisions: tuple[FileDecision, ...]

    def count(self, action: Action) -> int:
        return sum(d.action == action for d in self.decisions)

    def totals(self) -> dict[str, int]:
        """What a run does: files per action, rows removed, bytes of the files deleted and sampled."""
        return {
            "files": len(self.decisions),
            "files_kept": self.count("keep"),
            "files_to_sample": self.count("sample"),
            "files_to_delete": self.count("delete"),
            "rows": sum(d.rows for d in self.decisions),
            "rows_removed": sum(d.rows - d.rows_after for d in self.decisions),
            "bytes": sum(d.bytes for d in self.decisions),
            "bytes_to_delete": sum(d.bytes for d in self.decisions if d.action == "delete"),
            "bytes_to_sample": sum(d.bytes for d in self.decisions if d.action == "sample"),
        }

    def by_table(self) -> list[dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        for d in self.decisions:
            row = rows.setdefault(
                d.table,
                {
                    "table": d.table,
                    "keep": 0,
                    "sample": 0,
                    "delete": 0,
                    "rows": 0,
                    "rows_after": 0,
                    "bytes": 0,
                },
            )
            row[d.action] += 1
            row["rows"] += d.rows
            row["rows_after"] += d.rows_after
            row["bytes"] += d.bytes
        return [rows[t] for t in sorted(rows)]

    def markdown(self) -> str:
        header = ("table", "files kept", "files sampled", "files deleted", "rows", "rows after", "MB")
        rows = [
            (
                str(r["table"]),
                str(r["keep"]),
                str(r["sample"]),
                str(r["delete"]),
                str(r["rows"]),
                str(r["rows_after"]),
                f"{r['bytes'] / 1e6:.2f}",
            )
            for r in self.by_table()
        ]
        return markdown_table(header, rows)


@dataclass(frozen=True)
class RetentionResult:
    plan: RetentionPlan
    sampled: tuple[Path, ...]
    deleted: tuple[Path, ...]
    # planned files that were gone or already sampled when their turn came (a concurrent run)
    skipped: tuple[str, ...] = field(default=())
    bytes_before: int = 0
    bytes_after: int = 0
    rows_removed: int = 0

    def totals(self) -> dict[str, int]:
        return {
            "files_sampled": len(self.sampled),
            "files_deleted": len(self.deleted),
            "files_skipped": len(self.skipped),
            "rows_removed": self.rows_removed,
            "bytes_freed": self.bytes_before - self.bytes_after,
        }


def plan_retention(
    warehouse_dir: str | Path,
    settings: RetentionSettings,
    now: datetime | None = None,
    keep_run_ids: Collection[str] = (),
) -> RetentionPlan:
    """Decide, without changing anything, what happens to every history file of the warehouse. The
    files of ``keep_run_ids`` (the pinned baselines: the regression checks compare with their rows)
    are kept whole at any age."""
    warehouse = Warehouse(Path(warehouse_dir))
    now = now or datetime.now(UTC)
    decisions: list[FileDecision] = []
    for path in warehouse.history_files():
        decisions.append(_decide(path, warehouse.table_of(path), settings, now, keep_run_ids))
    for path in warehouse.dataset_history_files():  # current.jsonl is the current version, not history
        with path.open("rb") as handle:
            rows = sum(1 for line in handle if line.strip())
        decisions.append(
            FileDecision(
                path,
                f"datasets/{warehouse.dataset_of(path)}",
                "keep",
                "generated dataset: an input of the history, kept whole",
                math.nan,
                "none",
                rows,
                rows,
                path.stat().st_size,
            )
        )
    return RetentionPlan(warehouse.base_dir, settings, now, tuple(decisions))


def _decide(
    path: Path, table: str, settings: RetentionSettings, now: datetime, keep_run_ids: Collection[str]
) -> FileDecision:
    size = path.stat().st_size
    parquet = pq.ParquetFile(path)
    rows = parquet.metadata.num_rows
    if is_aggregate(table):
        return FileDecision(
            path, table, "keep", "aggregate table: kept forever", math.nan, "none", rows, rows, size
        )
    mark = read_mark(parquet.schema_arrow.metadata)
    age_days, age_from = _age_days(path, parquet, mark, now)

    def decide(action: Action, reason: str, rows_after: int) -> FileDecision:
        return FileDecision(path, table, action, reason, age_days, age_from, rows, rows_after, size)

    if path.stem in keep_run_ids:
        return decide("keep", "a pinned baseline's run: kept whole while it is pinned", rows)
    if age_days <= settings.full_rows_days:
        return decide(
            "keep", f"{age_days:.1f} days old: all rows kept for {settings.full_rows_days} days", rows
        )
    if age_days > settings.sampled_rows_days:
        return decide("delete", f"{age_days:.1f} days old: older than {settings.sampled_rows_days} days", 0)
    if mark is not None:
        return decide(
            "keep", f"already sampled ({mark.get('sampled_rows')} of {mark.get('of_rows')} rows)", rows
        )
    if rows <= settings.sampled_rows:
        return decide("keep", f"{rows} rows, no more than the {settings.sampled_rows} a sample keeps", rows)
    sampled = len(
        sample_positions(parquet.read(columns=_key_columns(parquet)), settings.sampled_rows, settings.seed)
    )
    return decide("sample", f"{age_days:.1f} days old: {sampled} of {rows} rows kept", sampled)


def _key_columns(parquet: pq.ParquetFile) -> list[str]:
    names = parquet.schema_arrow.names
    return [next(k for k in SAMPLE_KEYS if k in names)] if any(k in names for k in SAMPLE_KEYS) else []


def _age_days(
    path: Path, parquet: pq.ParquetFile, mark: dict[str, Any] | None, now: datetime
) -> tuple[float, AgeSource]:
    """The newest ``created_at`` in the file; files without one by their modification time (kept by
    sampling, and recorded in the mark as well)."""
    if "created_at" in parquet.schema_arrow.names:
        column = parquet.read(columns=["created_at"]).column("created_at").to_pandas()
        newest = pd.to_datetime(column, utc=True, errors="coerce").max()
        if not pd.isna(newest):
            return (pd.Timestamp(now) - newest).total_seconds() / DAY_SECONDS, "created_at"
    mtime = float(mark["mtime"]) if mark and "mtime" in mark else path.stat().st_mtime
    return (now.timestamp() - mtime) / DAY_SECONDS, "mtime"


def read_mark(metadata: dict[bytes, bytes] | None) -> dict[str, Any] | None:
    """The retention mark of a sampled file, or None."""
    if not metadata or MARK not in metadata:
        return None
    value = json.loads(metadata[MARK])
    return value if isinstance(value, dict) else None


def sample_positions(table: pa.Table, n: int, seed: int) -> list[int]:
    """At most ``n`` row positions, in file order: whole keys (a question with all its rows) in the
    order of sha256(seed:key), so every file of every run keeps the same questions; keys that no longer
    fit are passed over for smaller ones. Without a key column, rows by sha256(seed:position)."""
    key = next((k for k in SAMPLE_KEYS if k in table.column_names), None)
    if key is None:
        order = sorted(range(table.num_rows), key=lambda i: _rank(seed, str(i)))
        return sorted(order[:n])
    groups: dict[str, list[int]] = {}
    for position, value in enumerate(table.column(key).to_pylist()):
        groups.setdefault(str(value), []).append(position)
    chosen: list[int] = []
    ordered = sorted(groups, key=lambda k: (_rank(seed, k), k))
    for name in ordered:
        if len(chosen) + len(groups[name]) <= n:
            chosen += groups[name]
    if not chosen and ordered and n > 0:  # every key has more rows than a sample keeps
        chosen = groups[ordered[0]][:n]
    return sorted(chosen)


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def apply_retention(plan: RetentionPlan) -> RetentionResult:
    """Carry out a plan: sample and delete what it says. Files that changed since the plan (gone, or
    sampled by another run) are skipped and listed."""
    sampled: list[Path] = []
    deleted: list[Path] = []
    skipped: list[str] = []
    before = after = removed = 0
    warehouse = Warehouse(plan.warehouse_dir)
    for d in plan.decisions:
        if d.action == "keep":
            continue
        if not d.path.exists():
            skipped.append(f"{d.path}: gone before retention reached it")
            continue
        size = d.path.stat().st_size
        if d.action == "delete":
            try:
                d.path.unlink()
                _remove_empty_folders(d.path.parent, warehouse.history_table_dir(d.table))
            except OSError as exc:
                raise storage_error(d.path, "delete", exc) from exc
            deleted.append(d.path)
            before, removed = before + size, removed + d.rows
            continue
        parquet = pq.ParquetFile(d.path)
        if read_mark(parquet.schema_arrow.metadata) is not None:
            skipped.append(f"{d.path}: already sampled")
            continue
        table = parquet.read()
        written = write_sample(d.path, table, plan.settings, plan.now)
        sampled.append(d.path)
        before, after, removed = (
            before + size,
            after + d.path.stat().st_size,
            removed + table.num_rows - written,
        )
    return RetentionResult(plan, tuple(sampled), tuple(deleted), tuple(skipped), before, after, removed)


def write_sample(path: Path, table: pa.Table, settings: RetentionSettings, now: datetime) -> int:
    """Replace ``path`` by its sample, atomically, with the mark and the old modification time."""
    stat = path.stat()
    positions = sample_positions(table, settings.sampled_rows, settings.seed)
    key = next((k for k in SAMPLE_KEYS if k in table.column_names), None)
    mark = {
        "sampled_rows": len(positions),
        "of_rows": table.num_rows,
        "key": key,
        "seed": settings.seed,
        "sampled_at": now.isoformat(),
        "mtime": stat.st_mtime,
    }
    metadata = {**(table.schema.metadata or {}), MARK: json.dumps(mark, sort_keys=True).encode()}
    sample = table.take(pa.array(positions, type=pa.int64())).replace_schema_metadata(metadata)
    write_atomically(path, lambda tmp: pq.write_table(sample, tmp))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return len(positions)


def _remove_empty_folders(folder: Path, stop: Path) -> None:
    """Partition folders emptied by deletion go too, up to (not including) the table folder."""
    while folder != stop and stop in folder.parents and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def describe(decisions: Sequence[FileDecision], limit: int = 20) -> list[str]:
    """Log lines for the files a run changes (the first ``limit``; the totals say the rest)."""
    changing = [d for d in decisions if d.action != "keep"]
    lines = [f"{d.action} {d.path} ({d.reason})" for d in changing[:limit]]
    if len(changing) > limit:
        lines.append(f"... and {len(changing) - limit} more files")
    return lines
