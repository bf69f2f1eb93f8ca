from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.resources import ProjectResource
from rag_eval_pipeline.sensors import partition_sync_sensor


def tick(instance: dg.DagsterInstance, project: Path, cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"project": ProjectResource(root=str(project))}
    )
    result = partition_sync_sensor(context)
    assert isinstance(result, dg.SensorResult)
    for request in result.dynamic_partitions_requests or []:
        assert isinstance(request, dg.AddDynamicPartitionsRequest)
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_sensor_adds_partitions_then_only_new_ones(tiny_project: Path):
    with dg.instance_for_test() as instance:
        first = tick(instance, tiny_project, None)
        assert instance.get_dynamic_partitions("chunk_config") == ["fixed-60-0", "recursive-120-20"]
        assert instance.get_dynamic_partitions("profile") == ["top2", "top4"]
        unchanged = tick(instance, tiny_project, first.cursor)
        assert not unchanged.dynamic_partitions_requests and unchanged.cursor == first.cursor

        configs = tiny_project / "data/chunk_configs.yaml"
        configs.write_text(
            configs.read_text() + "  - {name: fixed-30-5, chunker: fixed, chunk_size: 30, chunk_overlap: 5}\n"
        )
        added = tick(instance, tiny_project, first.cursor)
        (request,) = added.dynamic_partitions_requests or []
        assert isinstance(request, dg.AddDynamicPartitionsRequest)
        assert list(request.partition_keys) == ["fixed-30-5"]
        assert added.cursor != first.cursor


def test_sensor_refuses_invalid_names_with_the_file(tiny_project: Path):
    configs = tiny_project / "data/chunk_configs.yaml"
    configs.write_text("chunk_configs:\n  - {name: 'bad|name', chunker: fixed, chunk_size: 30}\n")
    with (
        dg.instance_for_test() as instance,
        pytest.raises(ConfigError, match="chunk_configs.yaml.*must match"),
    ):
        tick(instance, tiny_project, None)
