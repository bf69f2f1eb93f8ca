import dagster as dg
import pytest

from rag_eval_pipeline.definitions import defs as load_defs
from rag_eval_pipeline.lib.executor import rag_eval_executor

# the main job's four jobs, one per partitioning (each metrics asset runs its regression check in its step)
JOB_NODES = {
    "ingestion_job": {"corpus", "synthetic_questions", "eval_questions", "answer_calibration"},
    "chunking_job": {"chunks", "chunk_index", "chunk_level_questions"},
    "evaluation_job": {
        "retrieval_results",
        "retrieval_metrics",
        "answers",
        "answer_metrics",
        "retrieval_diagnostics",
    },
    "leaderboard_job": {"answer_judgements", "question_set_health", "leaderboard"},
}


@pytest.fixture(scope="module")
def defs() -> dg.Definitions:
    """The definitions as `dagster dev` loads them (the module itself builds nothing when imported)."""
    return load_defs()


def test_definitions_load_with_every_asset_job_and_sensor(defs: dg.Definitions):
    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {
        "documents",
        "project_settings",
        "chunk_config_settings",
        "retrieval_profile_settings",
        "configured_setups",
        "leaderboard_settings",
        "corpus",
        "synthetic_questions",
        "eval_questions",
        "chunk_level_questions",
        "chunks",
        "chunk_index",
        "retrieval_results",
        "retrieval_metrics",
        "answer_calibration",
        "answers",
        "answer_metrics",
        "retrieval_diagnostics",
        "answer_judgements",
        "question_set_health",
        "leaderboard",
        "search_outcome",
        "search_race",
    }
    jobs = (
        "ingestion_job",
        "chunking_job",
        "evaluation_job",
        "leaderboard_job",
        "retention_job",
        "search_job",
    )
    for job in jobs:
        assert defs.resolve_job_def(job) is not None
    for sensor in ("partition_sync_sensor", "document_sensor", "automation_sensor"):
        assert defs.resolve_sensor_def(sensor).default_status == dg.DefaultSensorStatus.RUNNING
    # a search embeds and queries a lot: it runs when asked for
    assert defs.resolve_sensor_def("search_sensor").default_status == dg.DefaultSensorStatus.STOPPED
    assert defs.resolve_schedule_def("nightly_evaluation_schedule").default_status == (
        dg.DefaultScheduleStatus.RUNNING
    )
    # retention deletes history for good: a team switches it on
    assert defs.resolve_schedule_def("retention_schedule").default_status == dg.DefaultScheduleStatus.STOPPED


def test_the_sensors_and_the_nightly_schedule_target_the_jobs_they_request(defs: dg.Definitions):
    """Targets Dagster checks at load, and the UI shows: a request for another job would fail."""
    assert {j.name for j in defs.resolve_sensor_def("partition_sync_sensor").jobs} == {
        "chunking_job",
        "evaluation_job",
    }
    assert defs.resolve_sensor_def("document_sensor").job_name == "ingestion_job"
    assert defs.resolve_schedule_def("nightly_evaluation_schedule").job_name == "evaluation_job"


def test_each_main_job_holds_its_assets_and_every_asset_is_in_one(defs: dg.Definitions):
    for job, nodes in JOB_NODES.items():
        assert {node.name for node in defs.resolve_job_def(job).graph.nodes} == nodes, job
    in_jobs = [n for nodes in JOB_NODES.values() for n in nodes]
    # the search is no part of the main job: its own job (defs/search/search_job.py)
    assert {node.name for node in defs.resolve_job_def("search_job").graph.nodes} == {"search_outcome"}
    graph = defs.resolve_asset_graph()
    assert sorted([*in_jobs, "search_outcome"]) == sorted(
        k.to_user_string() for k in graph.materializable_asset_keys
    )
    # the rest are what the pipeline reads from outside, observed, never materialized (lib/freshness.py),
    # and the race's partitions, which the search materializes as it runs
    assert sorted(k.to_user_string() for k in graph.external_asset_keys) == [
        "chunk_config_settings",
        "configured_setups",
        "documents",
        "leaderboard_settings",
        "project_settings",
        "retrieval_profile_settings",
        "search_race",
    ]


def test_each_asset_is_grouped_by_its_stage_folder(defs: dg.Definitions):
    """The UI's groups are the folders of defs/ (the jobs name their assets: they follow partitioning)."""
    for asset in defs.assets or ():
        if isinstance(asset, dg.AssetSpec):  # the race (defs/search/)
            assert asset.group_name == "search", asset.key
            continue
        assert isinstance(asset, dg.AssetsDefinition)
        stage = asset.op.compute_fn.decorated_fn.__module__.split(".")[2]  # rag_eval_pipeline.defs.<stage>
        for key in asset.keys:  # the sources are observed together (defs/ingestion/sources.py)
            assert asset.group_names_by_key[key] == stage, key


def test_evaluation_assets_are_partitioned_by_chunk_config_and_profile(defs: dg.Definitions):
    graph = defs.resolve_asset_graph()
    partitions = graph.get(dg.AssetKey("retrieval_metrics")).partitions_def
    assert isinstance(partitions, dg.MultiPartitionsDefinition)
    for asset in ("answers", "answer_metrics", "retrieval_diagnostics"):
        assert graph.get(dg.AssetKey(asset)).partitions_def == partitions
    assert sorted(d.name for d in partitions.partitions_defs) == ["chunk_config", "profile"]
    assert all(
        isinstance(d.partitions_def, dg.DynamicPartitionsDefinition) for d in partitions.partitions_defs
    )


def test_an_evaluation_partition_reads_its_chunk_configs_chunks(defs: dg.Definitions):
    """The mapping Dagster infers, as chunk_config is a dimension of the evaluation partitions."""
    graph = defs.resolve_asset_graph()
    for child, parent in (
        ("retrieval_results", "chunks"),
        ("retrieval_results", "chunk_index"),
        ("retrieval_results", "retrieval_profile_settings"),  # its profile's settings (lib/freshness.py)
    ):
        mapping = graph.get_partition_mapping(dg.AssetKey(child), dg.AssetKey(parent))
        assert isinstance(mapping, dg.MultiToSingleDimensionPartitionMapping), (child, parent)


def test_a_materialization_from_the_asset_graph_runs_in_one_process(defs: dg.Definitions):
    """The UI's "Materialize" outside the jobs uses the definitions' executor, the jobs' own: one process
    (not a process per step, Dagster's default), or Dask workers when configured (lib/executor.py)."""
    assert defs.executor is rag_eval_executor
    for name in ("ingestion_job", "chunking_job", "evaluation_job", "leaderboard_job"):
        assert defs.resolve_job_def(name).executor_def is rag_eval_executor
