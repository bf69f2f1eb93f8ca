"""The instance's SQLite event log with one SQLAlchemy engine per database file, not one per connection.

Dagster's ``SqliteEventLogStorage`` (1.13) creates an engine for every connection it opens and disposes
of it after: about 220 connections in one evaluation partition's run (every event is written to the
run's database, asset events to the index too, and every input's data version is read). An engine
keeps SQLAlchemy's cache of compiled statements, so each of those connections compiled its statements
again: 5,568 compilations in a cold demo run. Here each database file keeps its engine for the
storage's life, and the engine keeps its connection between uses (a pool of one, more only while
``has_table`` asks inside a connection): opening a SQLite file and closing it again, which checkpoints
and removes its write-ahead log each time, was a tenth of an in-process evaluation's CPU. Other
processes (the daemon, the webserver, `rag-eval`) still read and write the same files: an idle
connection holds no lock, and in WAL mode each transaction sees what others committed. Connections are
used under the same lock as Dagster's, and the files on disk are the ones Dagster's class writes, so a
dagster.yaml naming either class reads the same history. A new run's database is also made cheaper:
Dagster creates its tables and stamps its migration revision with alembic, which reads every migration
script (about 0.1 CPU s a run); here the first new database of the process is made that way, in memory,
and each later one, of any storage of the process, is a copy of it (SQLite's backup), written beside
the run's file and linked into place only if no other process made that file first (else Dagster's own
initialisation checks it). Its connections commit with ``synchronous=NORMAL`` (no sync of the file for
every event: ``synchronous_normal``).
benchmarks/end_to_end.py (the overhead section) measures what both save on a partition's run.

One of the package's three uses of a private Dagster module (with lib/run_storage.py and
lib/compute_logs.py, the instance's other storages): the class exists only there, and the method
replaced (``_connect``) is private. dagster is pinned in pyproject.toml and
rag_eval_pipeline_tests/lib/test_event_log_storage.py fails if either changes shape.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
)
from dagster._core.storage.sql import create_engine
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool, StaticPool

from ..core.store.files import writer_token

# Engines kept at once: a run's steps use its own database and the index; the webserver, which reads
# any number of runs, keeps the most recently used ones only (an engine holds its compiled statements).
KEPT_ENGINES = 16

# An empty run database as Dagster initialises one, in memory, made once a process: its schema is
# Dagster's (the pinned release), the same for every storage (the tests open hundreds of instances).
_template: Engine | None = None
_template_lock = threading.Lock()


def synchronous_normal(connection: sqlite3.Connection, _record: object) -> None:
    """Each commit of an event without its own fsync: in WAL mode SQLite then syncs at checkpoints only.
    A crash of the process loses nothing; a power cut can lose the last events committed before it, never
    the database. Dagster's default (FULL) synced every event, 98 a partition's run (fdatasync, these and
    the warehouse's, was 0.4 CPU s of a cold demo run; the commit the largest part of an event's write)."""
    connection.execute("PRAGMA synchronous=NORMAL")


class PresentSchemaFacts:
    """Schema facts that only a migration changes, and only from absent to present (a column added, an
    index migration finished): a present one is remembered, an absent one asked again each time, as
    another process may migrate meanwhile. Dagster asked the database at every use: a reflection of the
    asset table's columns or a query of the migrations table, ~0.4 CPU s of a cold demo run."""

    def __init__(self) -> None:
        self._present: set[tuple[str, str]] = set()

    def ask(self, fact: tuple[str, str], question: Callable[[], bool]) -> bool:
        if fact in self._present:
            return True
        present = question()
        if present:
            self._present.add(fact)
        return present

    def forget(self) -> None:
        self._present.clear()


class EngineKeepingSqliteEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` whose engine per shard (the run's database, the index) outlives a
    connection. Named in dagster.yaml under ``event_log_storage`` with ``base_dir: <storage>/history/runs``
    (where ``storage: sqlite: base_dir: <storage>`` puts Dagster's)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        # its own lock: has_table runs inside connections that hold the storage's lock, and outside them
        self._engines_lock = threading.Lock()
        self._schema = PresentSchemaFacts()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> EngineKeepingSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def engine_for(self, shard: str) -> Engine:
        """The shard's engine, made at its first use."""
        conn_string = self.conn_string_for_shard(shard)
        with self._engines_lock:
            engine = self._engines.get(conn_string)
            if engine is not None:
                self._engines.move_to_end(conn_string)
                return engine
            engine = create_engine(
                conn_string,
                poolclass=QueuePool,
                pool_size=1,  # kept; more are opened (and closed after) only while one is in use
                max_overflow=-1,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            sqlalchemy_event.listen(engine, "connect", synchronous_normal)
            self._engines[conn_string] = engine
            if len(self._engines) > KEPT_ENGINES:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()  # closes its kept connection; one in use is closed when it is returned
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self.engine_for(shard)
            if shard not in self._initialized_dbs:
                if shard == INDEX_SHARD_NAME or not self.created_from_template(shard):
                    self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        """Dagster's, through the index's kept engine (Dagster made an engine for each of these
        questions: about 10 a run); a table found is remembered (Dagster asked at every asset event)."""
        return self._schema.ask(("table", table_name), functools.partial(self._has_table, table_name))

    def _has_table(self, table_name: str) -> bool:
        engine = self.engine_for(INDEX_SHARD_NAME)
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    def has_secondary_index(self, name: str) -> bool:
        return self._schema.ask(
            ("secondary index", name), functools.partial(super().has_secondary_index, name)
        )

    def _has_asset_key_col_on_connection(self, conn: Connection, column_name: str) -> bool:
        # under has_asset_key_col and the asset event writes' own check, inside their transactions
        return self._schema.ask(
            ("asset_keys column", column_name),
            functools.partial(super()._has_asset_key_col_on_connection, conn, column_name),
        )

    def created_from_template(self, shard: str) -> bool:
        """Makes a run's database that does not exist yet as a copy of the template; False when the
        file exists (made earlier, or by another process meanwhile). Call with the storage's lock held."""
        path = Path(self.path_for_shard(shard))
        if path.exists():
            return False
        scratch = path.with_name(f".{path.name}.{writer_token()}.tmp")
        try:
            # entered in order: the template is made (once) and read with its lock held
            with (
                _template_lock,
                self._template_engine().connect() as source,
                closing(sqlite3.connect(scratch)) as target,
            ):
                source_db: Any = source.connection.driver_connection
                source_db.backup(target)
                target.execute("PRAGMA journal_mode=WAL")  # as Dagster's initialisation leaves a file
            os.link(scratch, path)  # fails if the file appeared meanwhile: never overwrite a run's events
        except OSError:  # it exists, or the file system makes no hard links: Dagster's own way
            return False
        finally:
            scratch.unlink(missing_ok=True)
        return True

    def _template_engine(self) -> Engine:
        """The process's template database, made by Dagster's own initialisation at its first use. Call
        with ``_template_lock`` held (one in-memory connection, shared by the storages' threads)."""
        global _template
        if _template is None:
            template = create_engine(
                "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
            )
            self._initdb(template)  # Dagster's own: tables, indexes, the alembic stamp
            _template = template
        return _template

    def dispose(self) -> None:
        super().dispose()
        self._dispose_engines()

    def wipe(self) -> None:
        """Dagster's, once every kept connection is closed: it deletes the run databases' files, and a
        connection kept open would go on writing to the deleted file."""
        self._dispose_engines()
        self._schema.forget()
        super().wipe()

    def _dispose_engines(self) -> None:
        with self._db_lock, self._engines_lock:
            engines, self._engines = list(self._engines.values()), OrderedDict()
        for engine in engines:
            engine.dispose()
