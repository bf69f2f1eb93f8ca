"""instances.py: the tests' Dagster instance keeps its runs where users' do, on the event log storage the
project's dagster.yaml names."""

from pathlib import Path

import dagster as dg
import yaml

from rag_eval_pipeline_tests.instances import instance_for_tests

REPO = Path(__file__).resolve().parents[1]


@dg.op
def one() -> int:
    return 1


@dg.job
def tiny() -> None:
    one()


def test_the_instance_is_the_projects_event_log_in_dagsters_layout(tmp_path: Path) -> None:
    named = yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))["event_log_storage"]
    with instance_for_tests(temp_dir=str(tmp_path)) as instance:
        storage = instance.event_log_storage
        assert (type(storage).__module__, type(storage).__name__) == (named["module"], named["class"])
        result = tiny.execute_in_process(instance=instance)
        assert result.success
        assert [e.dagster_event_type for e in instance.all_logs(result.run_id)][
            -1
        ] == dg.DagsterEventType.RUN_SUCCESS
    # where `storage: sqlite: base_dir: HOME` puts them, as the project's dagster.yaml has them under .dagster/storage
    assert (tmp_path / "history" / "runs.db").is_file()
    assert (tmp_path / "history" / "runs" / f"{result.run_id}.db").is_file()
    assert (tmp_path / "history" / "runs" / "index.db").is_file()
    project_layout = Path(named["config"]["base_dir"]).relative_to(".dagster/storage")
    assert project_layout == Path("history/runs")
