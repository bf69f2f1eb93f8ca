"""The warehouse: where every table, run history, generated dataset, report and ledger lives under one
base folder, the one writer of a table's files, and the readers of its history. No other code builds a
path under the base folder or reads a history file.

    <base>/current/<table>.parquet                              a table's current version
    <base>/current/<table>/<d1>=<v1>/<d2>=<v2>.parquet          ... of one partition
    <base>/history/<table>[/<d1>=<v1>/<d2>=<v2>]/<run_id>.parquet   one file per run, hive style
    <base>/datasets/<name>[/<d>=<v>...]/current.jsonl           a generated dataset, and a copy per run
    <base>/datasets/<name>[/<d>=<v>...]/history/<run_id>.jsonl  in the folder next to it
    <base>/reports/leaderboard.html, reports/history/<run_id>.html   the latest report, and each run's
    <base>/anchors/<golden dataset>.json                        the anchor ledger (core/questions/reanchor.py)
    <base>/baselines/baselines.json                             the pinned baselines (core/evaluation/baselines.py)

One file per run, and each (evaluation, table, partition) once: a run that writes a table partition
another run of its evaluation wrote before (``run --resume`` after a run was killed between two steps)
replaces that run's history file (``supersedes``), so per-evaluation counts hold each row once. A run of
another evaluation (``--force`` makes a new one) keeps its own file.

Partition folders are ``<dimension>=<value>``, dimensions sorted by name (Dagster's order of a multi
partition key), so DuckDB, pyarrow.dataset and pandas read a table's history as one table with the
dimensions as columns. Names users chose pass through ``core/paths.child_path``.

A table written before some of its columns existed is read in its current shape: every reader here
upgrades what it reads (core/store/table_upgrades.py; ``evaluation_defaults_view`` there for the DuckDB views),
so no caller sees an old shape.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import StorageError
from ..questions.datasets import ChunkLevelDataset, TokenLevelDataset, write_jsonl
from ..redaction import redact_frame
from .files import os_reason, storage_error, write_files_atomically
from .frame_cache import PROCESS_FRAMES
from .paths import child_path
from .table_upgrades import upgraded, with_evaluation_defaults

# Where the warehouse is when the project does not say: this variable, else data/warehouse.
WAREHOUSE_ENV = "RAG_EVAL_WAREHOUSE_DIR"

# Tables of one row per run and partition, written beside the per-question tables: the history of
# every run's means and confidence intervals.
RETRIEVAL_SUMMARY = "retrieval_metrics_summary"
ANSWER_SUMMARY = "answer_metrics_summary"
SUMMARY_TABLES = (RETRIEVAL_SUMMARY, ANSWER_SUMMARY)
# One row per run and partition of retrieval_diagnostics: the mean share of each stage, the oracles.
DIAGNOSTICS_SUMMARY = "retrieval_diagnostics_summary"
LEADERBOARD = "leaderboard"

# What to do about a current table that cannot be read: its asset writes it again from its inputs.
REBUILD_REMEDY = "`rag-eval run --force` rebuilds it (its asset writes it again from its inputs)"

Partition = Mapping[str, str]  # dimension -> value; empty for a table without partitions
NO_PARTITION: Partition = {}


def partition_folders(partition: Partition) -> list[str]:
    """``<dimension>=<value>`` per dimension, sorted by dimension name."""
    return [f"{dimension}={partition[dimension]}" for dimension in sorted(partition)]


@dataclass(frozen=True)
class ReportPaths:
    current: Path  # reports/leaderboard.html, replaced by every leaderboard
    snapshot: Path  # reports/history/<run_id>.html, kept


@dataclass(frozen=True)
class HistoryRead:
    """A table's history read file by file (old files may lack newer columns); unreadable files are
    listed, not skipped silently."""

    frame: pd.DataFrame
    files: int
    unreadable: tuple[str, ...]


@dataclass(frozen=True)
class Warehouse:
    """The layout under ``base_dir``. Building a path creates nothing; the writers create folders."""

    base_dir: Path

    @classmethod
    def in_project(cls, project_dir: Path, environ: Mapping[str, str] = os.environ) -> Warehouse:
        """``$RAG_EVAL_WAREHOUSE_DIR``, else ``<project>/data/warehouse``."""
        return cls(Path(environ.get(WAREHOUSE_ENV) or project_dir / "data" / "warehouse"))

    # -- layout --------------------------------------------------------------------------------------

    @property
    def current_dir(self) -> Path:
        return self.base_dir / "current"

    @property
    def history_dir(self) -> Path:
        return self.base_dir / "history"

    @property
    def datasets_dir(self) -> Path:
        return self.base_dir / "datasets"

    @property
    def reports_dir(self) -> Path:
        return self.base_dir / "reports"

    @property
    def baselines_path(self) -> Path:
        return self.base_dir / "baselines" / "baselines.json"

    def current_path(self, table: str, partition: Partition = NO_PARTITION) -> Path:
        """The file a table's (or partition's) current version is read from and replaced in."""
        folders = partition_folders(partition)
        if not folders:
            return child_path(self.current_dir, f"{table}.parquet")
        return child_path(self.current_dir, table, *folders[:-1], f"{folders[-1]}.parquet")

    def history_table_dir(self, table: str) -> Path:
        return child_path(self.history_dir, table)

    def history_partition_dir(self, table: str, partition: Partition = NO_PARTITION) -> Path:
        """The folder of one partition's history files of ``table`` (the table's folder without one)."""
        return child_path(self.history_dir, table, *partition_folders(partition))

    def history_path(self, table: str, partition: Partition, run_id: str) -> Path:
        """The file a run wrote for a table (and partition); history mirrors the current layout."""
        return child_path(self.history_dir, table, *partition_folders(partition), f"{run_id}.parquet")

    def dataset_folder(self, name: str, partition: Partition = NO_PARTITION) -> Path:
        return child_path(self.datasets_dir, name, *partition_folders(partition))

    def dataset_of(self, dataset_file: Path) -> str:
        """The name of the generated dataset a file of ``dataset_history_files`` belongs to."""
        return dataset_file.relative_to(self.datasets_dir).parts[0]

    def report_paths(self, run_id: str) -> ReportPaths:
        return ReportPaths(
            self.reports_dir / "leaderboard.html", child_path(self.reports_dir, "history", f"{run_id}.html")
        )

    def anchors_path(self, dataset_name: str) -> Path:
        """The anchor ledger of a golden dataset (by its file's stem): which document versions its
        spans were last found valid against."""
        return child_path(self.base_dir / "anchors", f"{dataset_name}.json")

    # -- listing -------------------------------------------------------------------------------------

    def history_tables(self, partition: Partition = NO_PARTITION) -> tuple[str, ...]:
        """Table folders holding at least one history file (of ``partition``: in its folder), sorted."""
        folders = sorted(self.history_dir.iterdir()) if self.history_dir.is_dir() else []
        return tuple(
            p.name
            for p in folders
            if p.is_dir()
            and not p.name.startswith(".")
            and next(_finished(self.history_partition_dir(p.name, partition), ".parquet"), None)
        )

    def history_files(self, table: str | None = None) -> list[Path]:
        """Every finished history file (of one table), sorted; a write's temporary file is not one."""
        return sorted(
            _finished(self.history_dir if table is None else self.history_table_dir(table), ".parquet")
        )

    def history_files_newest_first(
        self, table: str, partition: Partition = NO_PARTITION
    ) -> list[tuple[Path, float]]:
        """The finished history files of ``table`` (of ``partition``) with their modification times,
        the most recently written first."""
        found = [
            (p, p.stat().st_mtime)
            for p in _finished(self.history_partition_dir(table, partition), ".parquet")
        ]
        return sorted(found, key=lambda pair: (-pair[1], str(pair[0])))

    def current_partitions(self, table: str) -> list[dict[str, str]]:
        """The partitions of ``table`` with a current version (dimension -> value), sorted."""
        folder = self.current_dir / table
        found = []
        for path in sorted(_finished(folder, ".parquet")):
            parts = [*path.relative_to(folder).parts[:-1], path.stem]
            pairs = [part.partition("=") for part in parts]
            if all(sep for _, sep, _ in pairs):
                found.append({name: value for name, _, value in pairs})
        return found

    def dataset_history_files(self) -> list[Path]:
        """The per-run copies of the generated datasets (not their ``current.jsonl``), sorted."""
        return sorted(p for p in _finished(self.datasets_dir, ".jsonl") if p.parent.name == "history")

    def history_source_sql(self, table: str, partition: Partition = NO_PARTITION) -> str:
        """A DuckDB table function reading every history file of ``table`` (only those of ``partition``,
        when given: no other partition's file is opened), partition folders as columns, a column
        missing from older files as NULL."""
        glob = str(self.history_partition_dir(table, partition) / "**" / "*.parquet").replace("'", "''")
        return (
            f"read_parquet('{glob}', hive_partitioning = true, union_by_name = true, "
            "hive_types_autocast = false)"
        )

    @staticmethod
    def history_files_source_sql(files: Sequence[Path]) -> str:
        """``history_source_sql`` over these files only, with each row's file in the column
        ``FILE_COLUMN``."""
        listed = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
        return (
            f"read_parquet([{listed}], hive_partitioning = true, union_by_name = true, "
            f"hive_types_autocast = false, filename = '{FILE_COLUMN}')"
        )

    # -- writing -------------------------------------------------------------------------------------

    def write_table(
        self,
        frame: pd.DataFrame,
        table: str,
        partition: Partition,
        run_id: str,
        supersedes: Collection[str] = (),
    ) -> Path:
        """A materialization: the current version of the table (partition) and the run's history file,
        both replaced or neither; then the history files of ``supersedes`` (earlier runs of the same
        evaluation) for this table and partition are removed. Returns the current file."""
        current = self.current_path(table, partition)
        write_parquet_files(frame, current, self.history_path(table, partition, run_id))
        self._remove_superseded(table, partition, run_id, supersedes)
        return current

    def write_history(
        self,
        frame: pd.DataFrame,
        table: str,
        partition: Partition,
        run_id: str,
        supersedes: Collection[str] = (),
    ) -> Path:
        """A run's rows of a table kept only as history (the per-run summaries); replaces the history
        files of ``supersedes`` for this table and partition, as ``write_table`` does."""
        path = self.history_path(table, partition, run_id)
        write_parquet_files(frame, path)
        self._remove_superseded(table, partition, run_id, supersedes)
        return path

    def _remove_superseded(
        self, table: str, partition: Partition, run_id: str, supersedes: Collection[str]
    ) -> None:
        """After the new file is in place (a crash in between leaves both, never neither). The folder is
        listed once: an evaluation's run supersedes every other run of it (about 20 in the demo's), and
        most of them never wrote this partition."""
        earlier = {f"{r}.parquet" for r in supersedes if r != run_id}
        if not earlier:
            return
        folder = self.history_partition_dir(table, partition)
        try:
            names = [entry.name for entry in os.scandir(folder) if entry.name in earlier]
        except FileNotFoundError:
            return
        except OSError as exc:
            raise storage_error(folder, "list", exc) from exc
        for name in sorted(names):
            _remove(folder / name)

    def write_dataset(
        self,
        dataset: TokenLevelDataset | ChunkLevelDataset,
        name: str,
        partition: Partition,
        run_id: str,
        supersedes: Collection[str] = (),
    ) -> Path:
        """A generated dataset as JSONL (the schema `rag-eval` and LangSmith import): the run's copy,
        then the current file, which is returned; the copies of ``supersedes`` (earlier runs of the same
        evaluation) are removed."""
        folder = self.dataset_folder(name, partition)
        run_copy, current = self._dataset_copy(folder, run_id), folder / "current.jsonl"
        write_jsonl(dataset, run_copy)
        write_jsonl(dataset, current)
        for earlier in supersedes:
            if earlier != run_id:
                _remove(self._dataset_copy(folder, earlier))
        return current

    @staticmethod
    def _dataset_copy(folder: Path, run_id: str) -> Path:
        return child_path(folder, "history", f"{run_id}.jsonl")

    # -- reading -------------------------------------------------------------------------------------

    def read_current(self, table: str, partition: Partition = NO_PARTITION) -> pd.DataFrame | None:
        """The table's current version, or None before its first materialization; a file that is not
        readable Parquet is a ``StorageError`` (``read_file``)."""
        path = self.current_path(table, partition)
        return self.read_file(path) if path.exists() else None

    def read_history(self, table: str, columns: Sequence[str]) -> HistoryRead:
        """The wanted columns of every history file of ``table`` (see ``_read_history_folder``)."""
        return _read_history_folder(self, self.history_table_dir(table), columns)

    def read_runs(self, table: str, runs: Iterable[tuple[str, Partition]]) -> pd.DataFrame:
        """The rows each (run id, partition) wrote to ``table`` (runs without a file add none), with
        the evaluation columns; an empty frame without columns when none wrote any."""
        frames = []
        for run_id, partition in runs:
            path = self.history_path(table, partition, run_id)
            if path.exists():
                frames.append(self.read_file(path))
        if not frames:
            return pd.DataFrame()
        return with_evaluation_defaults(pd.concat(frames, ignore_index=True))

    def read_file(self, path: Path) -> pd.DataFrame:
        """One Parquet file of the warehouse, in its table's current shape (``upgraded``). A damaged file
        (cut short by a crash or a full disk, overwritten) raises ``StorageError`` naming it and what to
        do; a missing one stays ``FileNotFoundError`` (a partition not materialized yet, which an input
        over every partition skips). Decoded once per process while the file is unchanged
        (core/store/frame_cache.py)."""
        try:
            return PROCESS_FRAMES.read(path, self._decode)
        except (FileNotFoundError, StorageError):
            raise
        except OSError as exc:  # of os.stat
            raise self.unreadable(path, exc) from exc

    def _decode(self, path: Path) -> pd.DataFrame:
        try:
            frame = pd.read_parquet(path)
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid on a damaged file is a ValueError
            raise self.unreadable(path, exc) from exc
        return upgraded(self.table_of(path), frame)

    def table_of(self, path: Path) -> str:
        """The table a current or history file belongs to (of ``history_files``, of ``current_path``;
        "" for a file outside both folders)."""
        file = Path(os.path.abspath(path))
        for folder in (Path(os.path.abspath(self.current_dir)), Path(os.path.abspath(self.history_dir))):
            if file.is_relative_to(folder) and file != folder:
                return file.relative_to(folder).parts[0].removesuffix(".parquet")
        return ""

    def unreadable(self, path: Path, error: Exception) -> StorageError:
        """The error for a warehouse file that cannot be read: the file, the reader's words and what to
        do, which depends on what the file is (a run's history file cannot be made again; a current
        version is, by the next run of its asset)."""
        reason = os_reason(error) if isinstance(error, OSError) and error.errno else _first_line(error)
        reason = reason.rstrip(".")
        for named in dict.fromkeys((str(path), str(path.absolute()))):  # the message names it already
            reason = reason.replace(f" '{named}'", "").replace(f"'{named}'", "it")
        return StorageError(path, "read", reason, self.if_damaged(path))

    def if_damaged(self, path: Path) -> str:
        """What to do about a damaged warehouse file at ``path``."""
        if path.is_relative_to(self.history_dir):
            return (
                f"it holds one run's rows of {self.table_of(path)} and cannot be made again: move it out "
                f"of the warehouse (the history then lacks that run's rows) or restore it from a backup"
            )
        if path.is_relative_to(self.current_dir):
            return f"{REBUILD_REMEDY}; its history files keep every earlier run"
        return "move it out of the warehouse or restore it from a backup"


def _first_line(error: Exception) -> str:
    """``ArrowInvalid: Parquet magic bytes not found in footer. ...``: the class and the first line."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def write_parquet_files(frame: pd.DataFrame, path: Path, *copies: Path) -> None:
    """``frame`` to ``path`` and to each of ``copies`` (a run's history file): all of them are replaced,
    or none (a full disk fails before any rename). Plain ``string`` columns (not pandas'
    ``large_string``), so a column that is also a hive partition folder (chunk_config, profile) merges
    with it when pyarrow reads the history."""
    frame = redact_frame(frame)  # no configured secret reaches a table (core/redaction.py)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema = pa.schema(
        [pa.field(f.name, pa.string()) if pa.types.is_large_string(f.type) else f for f in table.schema],
        metadata=table.schema.metadata,
    )
    written: list[Path] = []

    def write(temporary: Path) -> None:
        if written:
            shutil.copyfile(written[0], temporary)
        else:
            pq.write_table(table.cast(schema), temporary)
        written.append(temporary)

    write_files_atomically([(target, write) for target in (path, *copies)])
    for target in (path, *copies):
        PROCESS_FRAMES.forget(target)


def _read_history_folder(warehouse: Warehouse, folder: Path, columns: Sequence[str]) -> HistoryRead:
    """The wanted columns of every history file under a table's ``folder``, one row per stored row.

    Missing folder -> empty frame. A file without a column gets NaN there; a file without a partition
    column takes it from its ``name=value`` folder, one without ``run_id`` from its file name; each
    file is upgraded to its table's current shape (``upgraded``), then the evaluation columns get their
    defaults (``with_evaluation_defaults``)."""
    frames: list[pd.DataFrame] = []
    unreadable: list[str] = []
    paths = sorted(_finished(folder, ".parquet"))
    for path in paths:
        try:
            present = set(pq.read_schema(path).names)
            frame = pq.read_table(path, columns=[c for c in columns if c in present]).to_pandas()
        except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on a corrupt file
            unreadable.append(str(warehouse.unreadable(path, exc)).removeprefix("cannot read "))
            continue
        for part in path.relative_to(folder).parts[:-1]:
            name, _, value = part.partition("=")
            if name in columns and name not in frame.columns:
                frame[name] = value
        if "run_id" not in frame.columns:
            frame["run_id"] = path.stem
        frames.append(upgraded(warehouse.table_of(path), frame))
    frames = [f for f in frames if not f.empty]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    for column in columns:
        if column not in frame.columns:
            frame[column] = pd.Series(float("nan"), index=frame.index, dtype="float64")
    return HistoryRead(with_evaluation_defaults(frame)[list(columns)], len(paths), tuple(unreadable))


def _remove(path: Path) -> None:
    """A file that may not exist removed; an OS error names it (``StorageError``)."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise storage_error(path, "remove", exc) from exc


# The column ``history_files_source_sql`` names each row's file in.
FILE_COLUMN = "__file"


def _finished(folder: Path, suffix: str) -> Iterator[Path]:
    """Files under ``folder`` ending in ``suffix``, without the temporary files of writes in progress
    (``.<name>.<host>.<pid>.<thread>.tmp``) or any other hidden file."""
    if not folder.is_dir():
        return iter(())
    return (p for p in folder.rglob(f"*{suffix}") if p.is_file() and not p.name.startswith("."))
