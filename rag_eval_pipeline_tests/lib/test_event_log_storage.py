"""The instance's event log keeps one engine per database file (a bounded number of them), makes a new
run's database as a copy of what Dagster initialises, and writes what Dagster's own class reads."""

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy
import yaml
from sqlalchemy.pool import Pool

from rag_eval_pipeline.lib import event_log_storage
from rag_eval_pipeline.lib.event_log_storage import KEPT_ENGINES, EngineKeepingSqliteEventLogStorage
from rag_eval_pipeline_tests.conftest import REPO


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]))
def numbers(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"partition": context.partition_key})


def project_instance_at(folder: Path) -> dg.DagsterInstance:
    """An instance from the repository's dagster.yaml, its paths under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (REPO / "dagster.yaml").read_text(encoding="utf-8").replace(".dagster/", f"{folder}/.dagster/")
    (folder / "dagster.yaml").write_text(text, encoding="utf-8")
    return dg.DagsterInstance.from_config(str(folder))


def test_the_project_instance_writes_through_one_engine_per_file(tmp_path: Path) -> None:
    with project_instance_at(tmp_path) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, EngineKeepingSqliteEventLogStorage)
        result = dg.materialize([numbers], instance=instance, partition_key="a")
        assert result.success

        with storage.index_connection() as first:
            index_engine = first.engine
        with storage.index_connection() as second:
            assert second.engine is index_engine
        with storage.run_connection(result.run_id) as run:
            run_engine = run.engine
        with storage.run_connection(result.run_id) as run:
            assert run.engine is run_engine and run_engine is not index_engine
        # the run's writes compiled its statements once: the engine holds them
        assert len(run_engine._compiled_cache) > 0  # type: ignore[attr-defined]


def test_dagsters_own_sqlite_storage_reads_the_history_it_wrote(tmp_path: Path) -> None:
    with project_instance_at(tmp_path) as instance:
        runs = [dg.materialize([numbers], instance=instance, partition_key=key).run_id for key in "ab"]
        events = {run_id: len(instance.all_logs(run_id)) for run_id in runs}
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "dagster.yaml").write_text(
        yaml.safe_dump({"storage": {"sqlite": {"base_dir": str(tmp_path / ".dagster" / "storage")}}}),
        encoding="utf-8",
    )
    with dg.DagsterInstance.from_config(str(plain)) as dagsters:
        assert type(dagsters.event_log_storage) is not EngineKeepingSqliteEventLogStorage
        assert {r.dagster_run.run_id for r in dagsters.get_run_records()} == set(runs)
        assert {run_id: len(dagsters.all_logs(run_id)) for run_id in runs} == events
        latest = dagsters.get_latest_materialization_event(dg.AssetKey("numbers"))
        assert latest is not None and latest.run_id == runs[1]
        materialized = dagsters.get_materialized_partitions(dg.AssetKey("numbers"))
        assert materialized == {"a", "b"}


def test_engines_are_kept_for_the_most_recent_files_only(tmp_path: Path) -> None:
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / "runs"))
    engines = []
    for i in range(KEPT_ENGINES + 3):
        with storage.run_connection(f"run-{i}") as conn:
            engines.append(conn.engine)
    with storage.run_connection(f"run-{KEPT_ENGINES + 2}") as conn:
        assert conn.engine is engines[-1]
    assert len(storage._engines) == KEPT_ENGINES
    with storage.run_connection("run-0") as conn:  # the oldest was let go: a new engine, same file
        assert conn.engine is not engines[0]
    storage.dispose()
    assert len(storage._engines) == 0


@pytest.mark.parametrize(
    "dagster_yaml", ["dagster.yaml", "rag_eval_pipeline/core/project/workspace_templates/dagster.yaml"]
)
def test_both_dagster_yamls_name_it_where_dagsters_sqlite_storage_keeps_its_files(dagster_yaml: str) -> None:
    config = yaml.safe_load((REPO / dagster_yaml).read_text(encoding="utf-8"))
    assert "storage" not in config  # the three storages are named one by one
    assert config["event_log_storage"]["module"] == EngineKeepingSqliteEventLogStorage.__module__
    assert config["event_log_storage"]["class"] == EngineKeepingSqliteEventLogStorage.__name__
    # the layout of `storage: sqlite: base_dir: .dagster/storage`: history and schedules stay readable
    assert {
        key: config[key]["config"]["base_dir"]
        for key in ("run_storage", "event_log_storage", "schedule_storage")
    } == {
        "run_storage": ".dagster/storage/history",
        "event_log_storage": ".dagster/storage/history/runs",
        "schedule_storage": ".dagster/storage/schedules",
    }


def schema(path: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
        return [(str(name), str(sql)) for name, sql in rows]


def stamp(path: Path) -> list[tuple[str]]:
    with closing(sqlite3.connect(path)) as db:
        return list(db.execute("SELECT version_num FROM alembic_version"))


def test_a_new_run_database_is_a_copy_of_what_dagster_initialises(tmp_path: Path) -> None:
    ours = EngineKeepingSqliteEventLogStorage(str(tmp_path / "ours"))
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    (plain_dir / "dagster.yaml").write_text(
        yaml.safe_dump({"storage": {"sqlite": {"base_dir": str(plain_dir / "storage")}}}), encoding="utf-8"
    )
    with dg.DagsterInstance.from_config(str(plain_dir)) as plain:
        storage = plain.event_log_storage
        with storage.run_connection("run-a"):  # type: ignore[attr-defined]
            pass
        dagster_made = Path(storage.path_for_shard("run-a"))  # type: ignore[attr-defined]
    for run in ("run-a", "run-b"):  # the first makes the template, the second is a copy as well
        with ours.run_connection(run):
            pass
        made = tmp_path / "ours" / f"{run}.db"
        assert schema(made) == schema(dagster_made)
        assert stamp(made) == stamp(dagster_made) and stamp(made)
        with closing(sqlite3.connect(made)) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    ours.dispose()  # its kept connections closed: their write-ahead logs are gone
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == ["index.db", "run-a.db", "run-b.db"]


def test_dagster_initialises_one_template_a_process_for_every_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each instance has its own storage (the tests open hundreds): the in-memory template is made once
    by Dagster's initialisation, then only copied; each storage's index is still Dagster's own."""
    monkeypatch.setattr(event_log_storage, "_template", None)
    initialised: list[str] = []
    initdb = EngineKeepingSqliteEventLogStorage._initdb

    def counted(self: EngineKeepingSqliteEventLogStorage, engine: sqlalchemy.Engine, **kwargs: bool) -> None:
        initialised.append(str(engine.url))
        initdb(self, engine, **kwargs)

    monkeypatch.setattr(EngineKeepingSqliteEventLogStorage, "_initdb", counted)
    for name in ("first", "second"):
        storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / name))
        with storage.run_connection("run-a"):
            pass
        assert storage.created_from_template("run-b") and stamp(tmp_path / name / "run-b.db")
        storage.dispose()
    assert initialised.count("sqlite://") == 1
    assert {u for u in initialised if u != "sqlite://"} == {
        f"sqlite:///{tmp_path / name / 'index.db'}" for name in ("first", "second")
    }  # no run database: those are copies


def test_a_run_database_another_process_made_is_kept_with_its_events(tmp_path: Path) -> None:
    with project_instance_at(tmp_path / "first") as instance:
        run_id = dg.materialize([numbers], instance=instance, partition_key="a").run_id
        events = len(instance.all_logs(run_id))
    # a second process's storage (a step worker of the same run) finds the file there
    config = yaml.safe_load((tmp_path / "first" / "dagster.yaml").read_text(encoding="utf-8"))
    other = EngineKeepingSqliteEventLogStorage(config["event_log_storage"]["config"]["base_dir"])
    assert not other.created_from_template(run_id)
    with other.run_connection(run_id):
        pass
    assert len(other.get_logs_for_run(run_id)) == events
    other.dispose()


def test_has_table_asks_through_the_kept_index_engine(tmp_path: Path) -> None:
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / "runs"))
    # a pool connects "first" once (for a listener added later: once from then on): an entry per engine
    pools: list[object] = []

    def first_connect(dbapi_connection: object, record: object) -> None:
        pools.append(dbapi_connection)

    sqlalchemy.event.listen(Pool, "first_connect", first_connect)
    try:
        assert storage.has_table("event_logs")  # the index's engine connects "first" here
        pools.clear()
        assert not storage.has_table("no_such_table") and storage.has_table("asset_keys")
    finally:
        sqlalchemy.event.remove(Pool, "first_connect", first_connect)
    assert pools == []  # Dagster's own has_table made (and connected) a new engine for each question
    storage.dispose()


def test_a_table_found_is_remembered_and_a_missing_one_asked_again(tmp_path: Path) -> None:
    """Dagster asks whether the asset event tags table exists at every asset event: a table present is
    known from then on (tables are only added), one absent is asked each time."""
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / "runs"))
    asked: list[str] = []
    has_table = storage._has_table

    def counting(table_name: str) -> bool:
        asked.append(table_name)
        return has_table(table_name)

    storage._has_table = counting  # type: ignore[method-assign]
    assert [storage.has_table("asset_event_tags") for _ in range(3)] == [True] * 3
    assert [storage.has_table("no_such_table") for _ in range(2)] == [False] * 2
    assert asked == ["asset_event_tags", "no_such_table", "no_such_table"]
    storage.dispose()


def test_without_hard_links_a_new_run_database_is_made_the_way_dagster_makes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: object, target: object) -> None:
        raise PermissionError(1, "Operation not permitted")  # what some network file systems answer

    monkeypatch.setattr(os, "link", no_links)
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / "runs"))
    assert not storage.created_from_template("run-a")
    with storage.run_connection("run-a"):  # Dagster's initialisation made it instead
        pass
    assert stamp(tmp_path / "runs" / "run-a.db")
    storage.dispose()  # its kept connections closed: their write-ahead logs are gone
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["index.db", "run-a.db"]  # no scratch


def test_a_file_is_opened_once_for_a_runs_events_not_once_an_event(tmp_path: Path) -> None:
    opened: list[object] = []

    def connect(dbapi_connection: object, record: object) -> None:
        opened.append(dbapi_connection)

    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / "runs"))
    sqlalchemy.event.listen(Pool, "connect", connect)
    try:
        for _ in range(20):
            with storage.run_connection("run-1") as conn:
                conn.execute(sqlalchemy.text("select 1"))
            with storage.index_connection() as conn:
                conn.execute(sqlalchemy.text("select 1"))
    finally:
        sqlalchemy.event.remove(Pool, "connect", connect)
    assert len(opened) <= 2  # one for the run's file, one for the index (Dagster's: 40)
    storage.dispose()


def test_a_wipe_closes_the_kept_connections_so_new_events_reach_the_new_files(tmp_path: Path) -> None:
    """Dagster's wipe deletes the run databases' files: a kept connection would write into the deleted
    file, and the events of a run made again after the wipe would be found nowhere."""
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / "runs"))
    insert = sqlalchemy.text(
        "insert into event_logs (run_id, event, dagster_event_type) values ('run-1', '{}', 'X')"
    )
    with storage.run_connection("run-1") as conn:
        conn.execute(insert)
    storage.wipe()
    with storage.run_connection("run-1") as conn:  # a new file for the same run
        conn.execute(insert)
        conn.execute(insert)
    with closing(sqlite3.connect(tmp_path / "runs" / "run-1.db")) as db:
        assert db.execute("select count(*) from event_logs").fetchone() == (2,)
    storage.dispose()


def test_an_event_is_committed_without_a_sync_of_its_own(tmp_path: Path) -> None:
    """synchronous=NORMAL on every kept connection, the run's file and the index: in WAL mode SQLite
    syncs at checkpoints (what the run wrote is read back by Dagster's own class: the test above)."""
    with project_instance_at(tmp_path) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, EngineKeepingSqliteEventLogStorage)
        result = dg.materialize([numbers], instance=instance, partition_key="b")
        assert result.success and len(instance.all_logs(result.run_id)) > 0
        modes = []
        for connection in (storage.run_connection(result.run_id), storage.index_connection()):
            with connection as conn:  # one at a time: each holds the storage's lock
                modes.append(conn.execute(sqlalchemy.text("PRAGMA synchronous")).scalar())
        assert modes == [1, 1]  # NORMAL; Dagster's default is FULL (2), a sync every commit


def reflected_tables(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables whose columns SQLAlchemy reflects from now on, in order, one entry a reflection."""
    reflected: list[str] = []
    get_columns = sqlalchemy.engine.reflection.Inspector.get_columns

    def counted(self: object, table_name: str, *args: object, **kwargs: object) -> object:
        reflected.append(table_name)
        return get_columns(self, table_name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlalchemy.engine.reflection.Inspector, "get_columns", counted)
    return reflected


def statements(engine: sqlalchemy.Engine) -> list[str]:
    """The SQL statements ``engine`` executes from now on."""
    executed: list[str] = []
    sqlalchemy.event.listen(engine, "before_cursor_execute", lambda *a: executed.append(str(a[2])))
    return executed


def test_a_present_schema_fact_is_asked_once_an_absent_one_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = reflected_tables(monkeypatch)
    with project_instance_at(tmp_path) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, EngineKeepingSqliteEventLogStorage)
        for _ in range(2):  # the runs read and write asset rows: Dagster asks for the columns each time
            assert dg.materialize([numbers], instance=instance, partition_key="a").success
        assert storage.has_asset_key_col("cached_status_data") and storage.has_asset_key_index_cols()
        assert asked.count("asset_keys") == 2  # each present column once, for both runs and the calls
        asked.clear()
        assert not storage.has_asset_key_col("no_such_column")
        assert not storage.has_asset_key_col("no_such_column")
        assert asked == ["asset_keys", "asset_keys"]  # absent: asked again, a migration may add it

        built = [name for name in ("asset_key_table", "schedule_jobs") if storage.has_secondary_index(name)]
        queries = statements(storage.engine_for("index"))
        for name in built:
            assert storage.has_secondary_index(name)
        assert not [q for q in queries if "secondary_indexes" in q]
        assert not storage.has_secondary_index("not-migrated")
        assert [q for q in queries if "secondary_indexes" in q]
        storage.wipe()  # a wiped index is asked again (its tables made anew: found again while it is)
        assert {fact for fact in storage._schema._present if fact[0] != "table"} == set()
