import dagster as dg

from rag_eval_pipeline.lib.partitions import (
    CHUNK_CONFIG,
    PROFILE,
    chunk_config_partitions,
    evaluation_partitions,
    keys_fixed_per_run,
)
from rag_eval_pipeline_tests.instances import instance_for_tests


def test_inside_a_run_the_keys_are_read_once_and_outside_every_lookup_asks_the_instance():
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions(CHUNK_CONFIG, ["fixed-60-0", "recursive-120-20"])
        instance.add_dynamic_partitions(PROFILE, ["top2"])
        key = dg.MultiPartitionKey({CHUNK_CONFIG: "fixed-60-0", PROFILE: "top2"})
        with keys_fixed_per_run(), dg.partition_loading_context(dynamic_partitions_store=instance):
            assert evaluation_partitions.has_partition_key(key)
            assert chunk_config_partitions.get_partition_keys() == ["fixed-60-0", "recursive-120-20"]
            instance.delete_dynamic_partition(CHUNK_CONFIG, "fixed-60-0")
            # answered from what the run read first: no SQLite connection per lookup
            assert chunk_config_partitions.has_partition_key("fixed-60-0")
            assert chunk_config_partitions.get_partition_keys() == ["fixed-60-0", "recursive-120-20"]
        with dg.partition_loading_context(dynamic_partitions_store=instance):
            assert not chunk_config_partitions.has_partition_key("fixed-60-0")
            assert chunk_config_partitions.get_partition_keys() == ["recursive-120-20"]
        with keys_fixed_per_run(), dg.partition_loading_context(dynamic_partitions_store=instance):
            assert not chunk_config_partitions.has_partition_key("fixed-60-0")  # each run reads afresh


def test_a_definition_with_run_scoped_keys_is_still_a_dynamic_partitions_definition():
    """The UI, sensors' add requests and the snapshots know it as Dagster's own."""
    assert isinstance(chunk_config_partitions, dg.DynamicPartitionsDefinition)
    assert chunk_config_partitions == dg.DynamicPartitionsDefinition(name=CHUNK_CONFIG)
    request = chunk_config_partitions.build_add_request(["a"])
    assert request.partitions_def_name == CHUNK_CONFIG and list(request.partition_keys) == ["a"]
