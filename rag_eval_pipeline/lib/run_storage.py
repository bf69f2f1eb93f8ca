"""The instance's SQLite run storage with one SQLAlchemy engine kept, not one per connection.

Dagster's ``SqliteRunStorage`` (1.13) creates an engine for every connection and disposes of it after, so
every read or write of runs.db opens the file and compiles its statements again: 2.8 CPU ms a run looked
up, 0.8 through a kept engine. A run reads and writes it about 25 times (its creation and snapshots, its
status events, the tags its steps record, this package's cancel watch). The engine here keeps one
connection between uses, as lib/event_log_storage.py does for the event log, with the same sharing:
other processes (the daemon, the webserver, `rag-eval`) use the same file, an idle connection holds no
lock, and in WAL mode each transaction sees what the others committed. Commits skip their own fsync
(``synchronous_normal``). The file is the one Dagster's class writes; dagster.yaml may name either.

A private Dagster module, like lib/event_log_storage.py; rag_eval_pipeline_tests/lib/test_run_storage.py
fails if the class changes shape.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.sql import create_engine
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

from .event_log_storage import PresentSchemaFacts, synchronous_normal


class EngineKeepingSqliteRunStorage(SqliteRunStorage):
    """``SqliteRunStorage`` whose engine outlives a connection. Named in dagster.yaml under
    ``run_storage`` with ``base_dir: <storage>/history`` (where ``storage: sqlite: base_dir: <storage>``
    puts Dagster's)."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()
        self._schema = PresentSchemaFacts()
        super().__init__(conn_string, inst_data)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> EngineKeepingSqliteRunStorage:
        return cls.from_local(inst_data=inst_data, **config_value)

    @property
    def engine(self) -> Engine:
        """Made at first use."""
        with self._engine_lock:
            if self._engine is None:
                self._engine = create_engine(
                    self._conn_string,
                    poolclass=QueuePool,
                    pool_size=1,  # kept; more are opened (and closed after) only while one is in use
                    max_overflow=-1,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
                )
                sqlalchemy_event.listen(self._engine, "connect", synchronous_normal)
            return self._engine

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def has_built_index(self, migration_name: str) -> bool:
        return self._schema.ask(
            ("built index", migration_name), functools.partial(super().has_built_index, migration_name)
        )

    def has_backfill_id_column(self) -> bool:  # asked at each run's creation
        return self._schema.ask(("runs column", "backfill_id"), super().has_backfill_id_column)

    def has_run_stats_index_cols(self) -> bool:
        return self._schema.ask(("runs column", "start_time, end_time"), super().has_run_stats_index_cols)

    def dispose(self) -> None:
        super().dispose()
        with self._engine_lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None
