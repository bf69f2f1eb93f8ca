"""instances.py: the tests' Dagster instance keeps its runs where Dagster's own layout puts them, on the
event log storage the project's dagster.yaml names."""

from pathlib import Path

import dagster as dg
import yaml

from rag_eval_pipeline_tests.conftest import REPO
from rag_eval_pipeline_tests.instances import instance_for_tests


@dg.op
def one() -> int:
    return 1


@dg.job
def tiny() -> None:
    one()


def files_of(home: Path, run_id: str) -> list[str]:
    """The instance's files, relative to its folder, the run's id as RUN; logs and artifacts left out."""
    return sorted(
        p.relative_to(home).as_posix().replace(run_id, "RUN")
        for p in home.rglob("*.db")
        if p.is_file() and not p.name.startswith(".")
    )


def test_the_instance_is_the_projects_event_log_in_dagsters_layout(tmp_path: Path) -> None:
    named = yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))["event_log_storage"]
    ours, plain = tmp_path / "ours", tmp_path / "plain"
    ours.mkdir()
    with instance_for_tests(temp_dir=str(ours)) as instance:
        storage = instance.event_log_storage
        assert (type(storage).__module__, type(storage).__name__) == (named["module"], named["class"])
        result = tiny.execute_in_process(instance=instance)
        assert result.success
        assert [e.dagster_event_type for e in instance.all_logs(result.run_id)][-1] == (
            dg.DagsterEventType.RUN_SUCCESS
        )
    plain.mkdir()
    (plain / "dagster.yaml").write_text(
        yaml.safe_dump({"storage": {"sqlite": {"base_dir": str(plain)}}}), encoding="utf-8"
    )
    with dg.DagsterInstance.from_config(str(plain)) as dagsters:
        assert type(dagsters.event_log_storage).__name__ == "SqliteEventLogStorage"
        plain_run = tiny.execute_in_process(instance=dagsters).run_id
    assert files_of(ours, result.run_id) == files_of(plain, plain_run)  # the same files, in the same place
    assert len(files_of(ours, result.run_id)) == 4  # runs, the run's events, the index, schedules
