"""The instance's run storage keeps one engine (and a connection) for its life, commits without a sync of
its own, and writes the runs.db Dagster's own class reads."""

from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy

from rag_eval_pipeline.lib import run_storage
from rag_eval_pipeline.lib.run_storage import EngineKeepingSqliteRunStorage
from rag_eval_pipeline_tests.lib.test_event_log_storage import (
    numbers,
    project_instance_at,
    reflected_tables,
    statements,
)


def test_the_project_instance_keeps_one_engine_for_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = []
    create_engine = run_storage.create_engine

    def counted(*args: object, **kwargs: object) -> sqlalchemy.Engine:
        made.append(args)
        return create_engine(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(run_storage, "create_engine", counted)
    with project_instance_at(tmp_path) as instance:
        storage = instance.run_storage
        assert isinstance(storage, EngineKeepingSqliteRunStorage)
        runs = [dg.materialize([numbers], instance=instance, partition_key=key).run_id for key in "ab"]
        for run_id in runs:
            record = instance.get_run_by_id(run_id)
            assert record is not None and record.status == dg.DagsterRunStatus.SUCCESS
        instance.add_run_tags(runs[0], {"team": "retrieval"})
        assert len(made) == 1  # creating, starting, ending, tagging and reading two runs: one engine
        with storage.connect() as conn:
            assert conn.execute(sqlalchemy.text("PRAGMA synchronous")).scalar() == 1  # NORMAL (FULL: 2)
    assert storage._engine is None  # disposed with the instance, its connection closed

    # Dagster's own class reads what it wrote: the same dagster.yaml, naming it instead
    text = (tmp_path / "dagster.yaml").read_text(encoding="utf-8")
    dagsters = text.replace("rag_eval_pipeline.lib.run_storage", "dagster._core.storage.runs").replace(
        "EngineKeepingSqliteRunStorage", "SqliteRunStorage"
    )
    assert dagsters != text
    (tmp_path / "dagster.yaml").write_text(dagsters, encoding="utf-8")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"
        found = {r.run_id: r for r in instance.get_runs()}
    assert set(found) == set(runs) and found[runs[0]].tags["team"] == "retrieval"


def test_the_runs_tables_columns_are_reflected_once_while_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reflected = reflected_tables(monkeypatch)
    with project_instance_at(tmp_path) as instance:
        storage = instance.run_storage
        assert isinstance(storage, EngineKeepingSqliteRunStorage)
        for key in "abab":  # each run's creation asks whether runs has its backfill_id column
            assert dg.materialize([numbers], instance=instance, partition_key=key).success
        assert storage.has_backfill_id_column() and storage.has_run_stats_index_cols()
        assert reflected.count("runs") <= 2  # once per column fact, not once per run

        queries = statements(storage.engine)
        assert not storage.has_built_index("not-migrated")
        assert not storage.has_built_index("not-migrated")
        assert len([q for q in queries if "secondary_indexes" in q]) == 2  # absent: asked every time
