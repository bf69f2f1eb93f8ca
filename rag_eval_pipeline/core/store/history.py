"""The Parquet history as SQL tables: every materialization ever written, one DuckDB view per table.

A table's history files (core/store/warehouse.py says where they are) become the view ``<table>``, with the
partition dimensions (``chunk_config``, ``profile``) as columns; files written before a column existed
read as NULL there. Rows from before evaluations were tagged get the warehouse's defaults (their run's
own evaluation, full mode), so every query sees one shape.

A store made for one partition (``HistoryStore(base, partition=...)``) reads only that partition's
files: its views hold that partition's rows, so what it costs grows with the partition's own history,
not with the whole warehouse's (the regression checks use it).

An *evaluation* is the set of Dagster runs (one per partition) that share an evaluation id; a run
launched on its own is an evaluation of one partition.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NewType, cast

import duckdb
import pandas as pd

from ..errors import InputError
from ..evaluation.comparability import BASIS_COLUMNS, series_breaks
from ..settings.monitoring_settings import EvaluationMode
from .table_upgrades import evaluation_defaults_view
from .warehouse import (
    FILE_COLUMN,
    NO_PARTITION,
    RETRIEVAL_SUMMARY,
    SUMMARY_TABLES,
    Partition,
    Warehouse,
)

# A partition's previous run is looked for in its files newest first: this many, then four times as
# many more each round (the check's own run and the one before it are usually the first two).
RECENT_FILES_FIRST = 4
# How far the clock that stamped a run's created_at may run ahead of the one that dated its file.
CLOCK_MARGIN = timedelta(minutes=10)

RunId = NewType("RunId", str)
EvaluationId = NewType("EvaluationId", str)

# Tables written once per run and partition; together they say which runs and evaluations exist
# (summaries outlive per-question rows once retention thins those out).
RUN_TABLES = (*SUMMARY_TABLES, "retrieval_metrics", "answer_metrics")
# The statements `rag-eval query` runs: DuckDB parses SHOW, DESCRIBE, SUMMARIZE, FROM ..., VALUES and
# WITH ... SELECT as SELECT too. Not EXPLAIN (EXPLAIN ANALYZE runs its statement), nor COPY, CREATE,
# ATTACH, EXPORT, SET, INSTALL, LOAD, PRAGMA or CALL.
_READING_STATEMENTS = frozenset({duckdb.StatementType.SELECT})
_SHOWN_CANDIDATES = 8
# A file DuckDB names in an error ("No magic bytes found at end of file '<path>'")
_QUOTED_PARQUET = re.compile(r"'([^']+\.parquet)'")

# The in-memory database the stores of one partition connect to (each its own connection: settings and
# temporary views are a connection's own): opening a database costs ~20 ms, a connection to an open one
# ~0.02, and the regression checks open a store of one partition for each of a run's 32 checks.
_partition_database: duckdb.DuckDBPyConnection | None = None
_partition_database_lock = threading.Lock()


def partition_connection() -> duckdb.DuckDBPyConnection:
    """A new connection to the process's database for stores of one partition (made at first use, with
    one thread: a few small files a query, where a second thread costs more than it saves)."""
    global _partition_database
    with _partition_database_lock:
        if _partition_database is None:
            _partition_database = duckdb.connect()
            _partition_database.execute("SET threads = 1")  # a regression check's history: -20 % CPU
        return _partition_database.cursor()


class HistoryError(InputError):
    """An unknown table, metric, run or evaluation, or SQL DuckDB rejects; the message says what exists."""


@dataclass(frozen=True, order=True)
class PartitionKey:
    chunk_config: str
    profile: str

    def __str__(self) -> str:
        # Dagster's multi-partition key: dimensions sorted by name, joined by "|"
        return f"{self.chunk_config}|{self.profile}"

    @classmethod
    def parse(cls, text: str) -> PartitionKey:
        chunk_config, sep, profile = text.partition("|")
        if not sep or not chunk_config or not profile or "|" in profile:
            raise HistoryError(
                f"a partition is written CHUNK_CONFIG|PROFILE (e.g. fixed-200-0|dense-top5), got {text!r}"
            )
        return cls(chunk_config, profile)

    def dimensions(self) -> dict[str, str]:
        """The warehouse's partition (dimension -> value) of this key."""
        return {"chunk_config": self.chunk_config, "profile": self.profile}


@dataclass(frozen=True)
class RunRecord:
    """One Dagster run of one partition, as the history remembers it."""

    run_id: RunId
    evaluation_id: EvaluationId
    mode: EvaluationMode
    partition: PartitionKey
    created_at: datetime
    dataset_sha256: str


@dataclass(frozen=True)
class ResolvedRef:
    """What a user's reference (evaluation id, run id or a unique prefix of either) points at: the
    latest run of each partition in that evaluation, or the one run."""

    ref: str
    kind: Literal["evaluation", "run"]
    evaluation_id: EvaluationId
    runs: tuple[RunRecord, ...]

    @property
    def partitions(self) -> tuple[PartitionKey, ...]:
        return tuple(r.partition for r in self.runs)

    def run_for(self, partition: PartitionKey) -> RunRecord | None:
        return next((r for r in self.runs if r.partition == partition), None)

    def describe(self) -> str:
        modes = sorted({r.mode for r in self.runs})
        label = f"run {self.runs[0].run_id}" if self.kind == "run" else f"evaluation {self.evaluation_id}"
        return f"{label} ({'/'.join(modes)}, {len(self.runs)} partition{'s' * (len(self.runs) != 1)})"


class HistoryStore:
    """Read-only SQL over the warehouse's history. Views are made on first use per table, so a check
    that needs one table does not read the schemas of every file of every other table. With a
    ``partition``, every view and table list covers that partition's files only; no file of another
    partition is opened."""

    def __init__(self, warehouse_dir: str | Path, *, partition: PartitionKey | None = None) -> None:
        self.warehouse = Warehouse(Path(warehouse_dir))
        self.partition = partition
        self._dimensions: Partition = partition.dimensions() if partition is not None else NO_PARTITION
        self.root = self.warehouse.history_dir  # named in messages
        self._opened: duckdb.DuckDBPyConnection | None = None
        self._views: dict[str, list[str]] = {}
        self._run_files: dict[str, dict[str, list[Path]]] = {}  # table -> run id -> its files read
        self._tables: tuple[str, ...] | None = None
        self._locked = False  # ``_read_only`` was applied

    @property
    def _connection(self) -> duckdb.DuckDBPyConnection:
        """Opened on first use: a regression check of a partition's first run reads no file. A store of
        one partition connects to the process's shared database (``partition_connection``), its views
        temporary (its connection's own); a store of the whole history opens its own (20 ms), which
        ``query`` may lock down."""
        if self._opened is None:
            self._opened = duckdb.connect() if self.partition is None else partition_connection()
            self._opened.execute("SET TimeZone = 'UTC'")
        return self._opened

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def tables(self) -> tuple[str, ...]:
        """Table folders holding at least one Parquet file (the history of every asset and summary), as
        found when first asked: a store reads one consistent set of tables."""
        if self._tables is None:
            self._tables = self.warehouse.history_tables(self._dimensions)
        return self._tables

    @property
    def _of_partition(self) -> str:
        return f" for partition {self.partition}" if self.partition is not None else ""

    def has_table(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> list[str]:
        self._view(table)
        return self._views[table]

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        """A user's DuckDB SQL over the history tables, read-only (``_read_only``): statements that only
        read, and files under the history folder only. Errors say which tables exist."""
        for table in self.tables:
            self._view(table)
        self._read_only()
        try:
            statements = self._connection.extract_statements(sql)
        except duckdb.Error as exc:
            raise HistoryError(
                f"DuckDB rejected the SQL: {exc}\nhistory tables: {', '.join(self.tables) or 'none yet'}"
            ) from None
        writing = sorted({s.type.name for s in statements if s.type not in _READING_STATEMENTS})
        if writing:
            raise HistoryError(
                f"`rag-eval query` only reads the history: {', '.join(writing)} statements are refused "
                f"(the pipeline alone writes {self.warehouse.base_dir}); ask with SELECT (or SHOW, "
                'DESCRIBE, SUMMARIZE), e.g. "select * from retrieval_metrics_summary"'
            )
        return self._sql(sql, params)

    def _read_only(self) -> None:
        """From here on, this connection touches no file outside the history folder (DuckDB's own
        settings: ``allowed_directories``, ``enable_external_access`` off, then ``lock_configuration``,
        so no statement can undo them; extensions cannot be installed or loaded either). DuckDB does not
        tell a read from a write inside an allowed folder, so ``query`` also runs only the statement
        kinds DuckDB's parser calls reading (``_READING_STATEMENTS``)."""
        if self._locked:
            return
        if self.partition is not None:  # its settings would be the shared database's, every store's
            raise HistoryError(
                "a store of one partition cannot run a user's SQL: open one of the whole history"
            )
        # a trailing separator: "history" must not also allow a sibling "history-old"
        folders = sorted({os.path.join(str(p), "") for p in (self.root.absolute(), self.root.resolve())})
        listed = ", ".join("'" + folder.replace("'", "''") + "'" for folder in folders)
        self._connection.execute(f"SET allowed_directories = [{listed}]")
        self._connection.execute("SET enable_external_access = false")
        self._connection.execute("SET lock_configuration = true")
        self._locked = True

    # -- runs and evaluations ------------------------------------------------------------------------

    def runs(self) -> list[RunRecord]:
        """Every run of a partition in the run tables, oldest first."""
        frame = self._runs_frame()
        return [_run_record(row) for row in frame.to_dict("records")]

    def evaluations(self) -> pd.DataFrame:
        """One row per evaluation: its mode(s), partitions, runs and when its first and last run wrote."""
        columns = ["evaluation_id", "mode", "n_partitions", "n_runs", "partitions", "started", "finished"]
        runs = self._runs_frame()
        if runs.empty:
            return pd.DataFrame(columns=columns)
        rows = []
        for evaluation_id, group in runs.groupby("evaluation_id", sort=False):
            partitions = sorted(
                {f"{c}|{p}" for c, p in zip(group["chunk_config"], group["profile"], strict=True)}
            )
            rows.append(
                {
                    "evaluation_id": evaluation_id,
                    "mode": "/".join(sorted(set(group["evaluation_mode"]))),
                    "n_partitions": len(partitions),
                    "n_runs": group["run_id"].nunique(),
                    "partitions": ", ".join(partitions),
                    "started": group["created_at"].min(),
                    "finished": group["created_at"].max(),
                }
            )
        return (
            pd.DataFrame(rows, columns=columns)
            .sort_values(["started", "evaluation_id"])
            .reset_index(drop=True)
        )

    def resolve(self, ref: str) -> ResolvedRef:
        """An evaluation id, a Dagster run id, or a prefix matching exactly one of either."""
        ref = ref.strip()
        if not ref:
            raise HistoryError("an empty reference: give an evaluation id, a run id or a prefix of one")
        runs = self.runs()
        if not runs:
            raise HistoryError(f"no evaluation in {self.root} yet: nothing to look {ref!r} up in")
        evaluations = {r.evaluation_id for r in runs}
        run_ids = {r.run_id for r in runs}
        if ref in evaluations:
            return self._evaluation(ref, EvaluationId(ref), runs)
        if ref in run_ids:
            return self._run(ref, RunId(ref), runs)
        # a run launched on its own is its own evaluation: its id is one match, as an evaluation
        kinds: dict[str, str] = {r: "run" for r in run_ids if r.startswith(ref)}
        kinds.update({e: "evaluation" for e in evaluations if e.startswith(ref)})
        matches = sorted((kind, name) for name, kind in kinds.items())
        if len(matches) == 1:
            kind, name = matches[0]
            if kind == "evaluation":
                return self._evaluation(ref, EvaluationId(name), runs)
            return self._run(ref, RunId(name), runs)
        if matches:
            shown = ", ".join(f"{kind} {name}" for kind, name in matches[:_SHOWN_CANDIDATES])
            more = f" and {len(matches) - _SHOWN_CANDIDATES} more" if len(matches) > _SHOWN_CANDIDATES else ""
            raise HistoryError(f"{ref!r} is ambiguous: it starts {shown}{more}; give more characters")
        recent = sorted({(r.created_at, r.evaluation_id) for r in runs}, reverse=True)
        latest = list(dict.fromkeys(e for _, e in recent))[:_SHOWN_CANDIDATES]
        raise HistoryError(
            f"no evaluation or run {ref!r} in {self.root}; recent evaluations: {', '.join(latest)} "
            '(`rag-eval query "select * from retrieval_metrics_summary"` shows every run)'
        )

    def question_rows(self, table: str, runs: ResolvedRef | Iterable[RunRecord]) -> pd.DataFrame:
        """The per-question (or per-run) rows those runs wrote to ``table``, in file order."""
        records = runs.runs if isinstance(runs, ResolvedRef) else tuple(runs)
        known = self._run_files.get(table, {})
        if records and all(str(r.run_id) in known for r in records):  # found by previous_full_run
            view, _ = self._files_view(table, sorted({f for r in records for f in known[str(r.run_id)]}))
            select = f'* EXCLUDE ("{FILE_COLUMN}")'
        else:
            self._view(table)
            view, select = table, "*"
        return self._sql(
            f'SELECT {select} FROM "{view}" WHERE list_contains($1, run_id)',
            [[str(r.run_id) for r in records]],
        )

    def latest_run_of(self, table: str, evaluation_id: str, partition: PartitionKey) -> RunRecord | None:
        """The latest run of ``partition`` in an evaluation that wrote rows to ``table``."""
        found = self._runs_frame((table,))
        found = found[
            (found["evaluation_id"] == evaluation_id)
            & (found["chunk_config"] == partition.chunk_config)
            & (found["profile"] == partition.profile)
        ]
        return _run_record(found.iloc[-1].to_dict()) if len(found) else None

    def find_run(self, run_id: str, tables: Sequence[str] = RUN_TABLES) -> RunRecord | None:
        """The run if it wrote rows to any of ``tables``."""
        found = self._runs_frame(tables)
        found = found[found["run_id"] == run_id]
        return _run_record(found.iloc[0].to_dict()) if len(found) else None

    def previous_full_run(
        self,
        table: str,
        partition: PartitionKey,
        dataset_sha256: str,
        before: datetime,
        exclude_run_id: str,
        answers_sha256: str | None = None,
    ) -> RunRecord | None:
        """The most recent full-mode run of ``partition`` on the same dataset (and, for answer metrics,
        the same reference answers) that wrote ``table`` before ``before``: what a new run is compared
        with when no baseline is pinned.

        A store of ``partition`` reads its files the most recently written first and stops once the
        next file was written before the best run found was created (a file is written after its run
        starts; ``CLOCK_MARGIN`` allows for clocks that disagree): one check reads a few files, not the
        partition's whole history."""
        criteria = (partition, dataset_sha256, before, exclude_run_id, answers_sha256)
        if self.partition is None:
            found = _previous_full(self._runs_frame((table,)), *criteria)
            return _run_record(found.iloc[-1].to_dict()) if len(found) else None
        files = [
            (path, written)
            for path, written in self.warehouse.history_files_newest_first(table, self._dimensions)
            if path.stem != exclude_run_id  # a history file holds the run it is named after (history_path)
        ]
        candidates: list[pd.DataFrame] = []
        read, batch = 0, RECENT_FILES_FIRST
        while read < len(files):
            chunk = [path for path, _ in files[read : read + batch]]
            read, batch = read + len(chunk), batch * 4
            found = _previous_full(self._runs_of_files(table, chunk), *criteria)
            if len(found):
                candidates.append(found)
            if candidates and read < len(files):
                best = max(pd.Timestamp(frame["created_at"].iloc[-1]) for frame in candidates)
                if files[read][1] < (best - CLOCK_MARGIN).timestamp():
                    break  # every file left was written before that run was created
        if not candidates:
            return None
        # as over the whole history: the same run's rows in two files make one row (min created_at)
        runs = (
            pd.concat(candidates)
            .groupby("run_id", as_index=False)
            .agg({c: "min" if c == "created_at" else "first" for c in candidates[0].columns if c != "run_id"})
        )
        latest = runs.sort_values(["created_at", "run_id"]).iloc[-1]
        return _run_record(latest.to_dict())

    # -- trends --------------------------------------------------------------------------------------

    def summary_table_for(self, metric: str) -> str:
        """The summary table that holds ``metric`` (retrieval first); an error lists the known metrics."""
        for table in SUMMARY_TABLES:
            if self.has_table(table) and f"{metric}_mean" in self.columns(table):
                return table
        known = sorted({m for t in SUMMARY_TABLES if self.has_table(t) for m in self.summary_metrics(t)})
        raise HistoryError(
            f"no metric {metric!r} in the history; known metrics: {', '.join(known) or 'none yet'}"
        )

    def summary_metrics(self, table: str) -> list[str]:
        return [c.removesuffix("_mean") for c in self.columns(table) if c.endswith("_mean")]

    def trend(
        self, metric: str, table: str = RETRIEVAL_SUMMARY, partition: PartitionKey | None = None
    ) -> pd.DataFrame:
        """The metric's mean per run, per partition over time: partition, created_at, evaluation and run,
        mode, n (questions it averages over), its confidence interval where the table has one, what the
        run was measured on (``BASIS_COLUMNS``, NULL where a file predates one) and ``break``: how it
        differs from the partition's run before it ("" when made alike: one line through them;
        core/evaluation/comparability.py)."""
        columns = self.columns(table)
        if f"{metric}_mean" not in columns:
            raise HistoryError(
                f"{table} has no metric {metric!r}; its metrics: {', '.join(self.summary_metrics(table))}"
            )
        ci_low = f'"{metric}_ci_low"' if f"{metric}_ci_low" in columns else "NULL::DOUBLE"
        ci_high = f'"{metric}_ci_high"' if f"{metric}_ci_high" in columns else "NULL::DOUBLE"
        n = f'"{metric}_n_ok"' if f"{metric}_n_ok" in columns else "n_questions"
        where, params = "", []
        if partition is not None:
            where, params = (
                "WHERE chunk_config = $1 AND profile = $2",
                [partition.chunk_config, partition.profile],
            )
        basis = ", ".join(
            f'"{c}"' if c in columns else f"NULL AS {c}" for c in BASIS_COLUMNS if c != "evaluation_mode"
        )
        frame = self._sql(
            f"""SELECT chunk_config, profile, created_at, evaluation_id, run_id, evaluation_mode,
                       {n}::BIGINT AS n, "{metric}_mean" AS mean, {ci_low} AS ci_low, {ci_high} AS ci_high,
                       {basis}
                FROM "{table}" {where}
                ORDER BY chunk_config, profile, created_at, run_id""",
            params,
        )
        breaks: dict[object, str] = {}
        for _, runs in frame.groupby(["chunk_config", "profile"], sort=False):
            breaks.update(zip(runs.index, series_breaks(runs), strict=True))
        frame["break"] = [breaks[i] for i in frame.index]
        if partition is not None and frame.empty:
            known = self._sql(f'SELECT DISTINCT chunk_config, profile FROM "{table}" ORDER BY ALL')
            names = [f"{c}|{p}" for c, p in zip(known["chunk_config"], known["profile"], strict=True)]
            raise HistoryError(f"{table} has no partition {partition}; partitions: {', '.join(names)}")
        return frame

    # -- internals -----------------------------------------------------------------------------------

    def _sql(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        try:
            relation = self._connection.sql(sql, params=params)
        except duckdb.PermissionException as exc:
            raise HistoryError(
                f"`rag-eval query` reads only the history under {self.root}: {_first_line(exc)}"
            ) from None
        except duckdb.CatalogException as exc:
            raise HistoryError(
                f"{_first_line(exc)}; history tables: {', '.join(self.tables) or 'none yet'}"
            ) from None
        except duckdb.Error as exc:
            self._raise_if_damaged(exc)
            raise HistoryError(
                f"DuckDB rejected the SQL: {exc}\nhistory tables: {', '.join(self.tables) or 'none yet'}"
            ) from None
        if relation is None:  # a statement without rows (SET, CREATE ...)
            return pd.DataFrame()
        try:
            return cast(pd.DataFrame, relation.to_arrow_table().to_pandas())
        except duckdb.PermissionException as exc:  # a file outside the history, found while reading
            raise HistoryError(
                f"`rag-eval query` reads only the history under {self.root}: {_first_line(exc)}"
            ) from None
        except duckdb.Error as exc:  # errors found while reading, e.g. a bad cast
            self._raise_if_damaged(exc)
            raise HistoryError(f"DuckDB could not run the SQL: {exc}") from None

    def _view(self, table: str) -> None:
        if table in self._views:
            return
        if not self.has_table(table):
            raise HistoryError(
                f"no history table {table!r} in {self.root}{self._of_partition}; tables: "
                f"{', '.join(self.tables) or 'none yet'}"
            )
        source = self.warehouse.history_source_sql(table, self._dimensions)
        where = f"under {self.warehouse.history_partition_dir(table, self._dimensions)}"
        self._views[table] = self._create_view(table, table, source, where)

    def _raise_if_damaged(self, exc: duckdb.Error) -> None:
        """A warehouse file DuckDB could not read (cut short, overwritten): a ``StorageError`` naming it
        and what to do (``Warehouse.unreadable``), not an error in the SQL."""
        if not isinstance(exc, duckdb.InvalidInputException | duckdb.IOException):
            return
        base = self.warehouse.base_dir.absolute()
        for quoted in _QUOTED_PARQUET.findall(str(exc)):
            path = Path(quoted).absolute()
            if path.is_relative_to(base) and path.is_file():
                raise self.warehouse.unreadable(
                    self.warehouse.base_dir / path.relative_to(base), exc
                ) from None

    def _runs_frame(self, tables: Sequence[str] = RUN_TABLES) -> pd.DataFrame:
        """run_id, evaluation_id, evaluation_mode, chunk_config, profile, created_at (the run's first
        row), dataset_sha256; one row per run, oldest first."""
        views = []
        for table in tables:
            if self.has_table(table):
                views.append((table, self.columns(table)))
        return self._runs_of_views(views)

    def _runs_of_files(self, table: str, files: Sequence[Path]) -> pd.DataFrame:
        """``_runs_frame`` of ``table`` from these files alone; remembers which file holds each run."""
        view, columns = self._files_view(table, files)
        runs = self._runs_of_views([(view, columns)], with_files=True)
        held = self._run_files.setdefault(table, {})
        for run_id, found in zip(runs["run_id"], runs["files"], strict=True):
            held[str(run_id)] = sorted({*held.get(str(run_id), []), *map(Path, found)})
        return runs.drop(columns="files")

    def _files_view(self, table: str, files: Sequence[Path]) -> tuple[str, list[str]]:
        """A view over some history files of ``table`` as ``_view`` makes one over all of them, plus
        ``FILE_COLUMN``; its name and columns (without that one)."""
        view = f"{table} (some files)"
        source = self.warehouse.history_files_source_sql(files)
        columns = self._create_view(view, table, source, f"in {', '.join(map(str, files))}")
        return view, [c for c in columns if c != FILE_COLUMN]

    def _create_view(self, view: str, table: str, source: str, where: str) -> list[str]:
        """View ``view`` over ``source`` (history files of ``table``), old shapes upgraded as they are read;
        its columns. ``where`` says in an error which files those are."""
        try:
            described = self._connection.sql(f"DESCRIBE SELECT * FROM {source}").fetchall()
        except duckdb.Error as exc:
            self._raise_if_damaged(exc)
            raise HistoryError(f"cannot read the history of {table} {where}: {exc}") from None
        select, columns = evaluation_defaults_view([str(row[0]) for row in described])
        temporary = "" if self.partition is None else "TEMPORARY "  # not seen by another store's connection
        self._connection.execute(
            f'CREATE OR REPLACE {temporary}VIEW "{view}" AS SELECT {select} FROM {source}'
        )
        return columns

    def _runs_of_views(
        self, views: Sequence[tuple[str, list[str]]], with_files: bool = False
    ) -> pd.DataFrame:
        """The runs in these views (name, columns), one row per run, oldest first; ``with_files``: also
        ``files``, those its rows came from (views made by ``_files_view``)."""
        file = f', "{FILE_COLUMN}"' if with_files else ""
        parts = []
        for table, columns in views:
            if not {"run_id", "chunk_config", "profile", "created_at"} <= set(columns):
                continue
            sha = "CAST(dataset_sha256 AS VARCHAR)" if "dataset_sha256" in columns else "''"
            answers = "CAST(answers_sha256 AS VARCHAR)" if "answers_sha256" in columns else "''"
            parts.append(
                f"""SELECT run_id, evaluation_id, evaluation_mode, chunk_config, profile,
                           CAST(created_at AS TIMESTAMPTZ) AS created_at, coalesce({sha}, '') AS dataset_sha256,
                           coalesce({answers}, '') AS answers_sha256{file}
                    FROM "{table}" """
            )
        columns = [
            "run_id",
            "evaluation_id",
            "evaluation_mode",
            "chunk_config",
            "profile",
            "created_at",
            "dataset_sha256",
            "answers_sha256",
        ] + (["files"] if with_files else [])
        if not parts:
            return pd.DataFrame(columns=columns)
        files = f', list(DISTINCT "{FILE_COLUMN}") AS files' if with_files else ""
        return self._sql(
            f"""SELECT run_id, any_value(evaluation_id) AS evaluation_id,
                       any_value(evaluation_mode) AS evaluation_mode, chunk_config, profile,
                       min(created_at) AS created_at, max(dataset_sha256) AS dataset_sha256,
                       max(answers_sha256) AS answers_sha256{files}
                FROM ({" UNION ALL ".join(parts)})
                GROUP BY run_id, chunk_config, profile
                ORDER BY created_at, run_id"""
        )

    def _evaluation(self, ref: str, evaluation_id: EvaluationId, runs: list[RunRecord]) -> ResolvedRef:
        latest: dict[PartitionKey, RunRecord] = {}
        for run in runs:  # oldest first: a partition run twice in one evaluation counts its last run
            if run.evaluation_id == evaluation_id:
                latest[run.partition] = run
        return ResolvedRef(ref, "evaluation", evaluation_id, tuple(latest[p] for p in sorted(latest)))

    def _run(self, ref: str, run_id: RunId, runs: list[RunRecord]) -> ResolvedRef:
        found = tuple(r for r in runs if r.run_id == run_id)
        return ResolvedRef(ref, "run", found[0].evaluation_id, found)


def _previous_full(
    runs: pd.DataFrame,
    partition: PartitionKey,
    dataset_sha256: str,
    before: datetime,
    exclude_run_id: str,
    answers_sha256: str | None,
) -> pd.DataFrame:
    """The rows of ``runs`` (``_runs_frame``'s shape) that may be ``previous_full_run``'s answer,
    oldest first: the last is the answer."""
    if answers_sha256 is not None:
        runs = runs[runs["answers_sha256"] == answers_sha256]
    return runs[
        (runs["chunk_config"] == partition.chunk_config)
        & (runs["profile"] == partition.profile)
        & (runs["evaluation_mode"] == "full")
        & (runs["dataset_sha256"] == dataset_sha256)
        & (runs["run_id"] != exclude_run_id)
        & (runs["created_at"] < pd.Timestamp(before))
    ]


def _run_record(row: Mapping[Hashable, Any]) -> RunRecord:
    mode = str(row["evaluation_mode"])
    return RunRecord(
        RunId(str(row["run_id"])),
        EvaluationId(str(row["evaluation_id"])),
        "quick" if mode == "quick" else "full",
        PartitionKey(str(row["chunk_config"]), str(row["profile"])),
        pd.Timestamp(row["created_at"]).to_pydatetime(),
        str(row["dataset_sha256"]),
    )


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0]
