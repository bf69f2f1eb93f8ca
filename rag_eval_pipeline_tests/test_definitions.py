import dagster as dg

from rag_eval_pipeline.definitions import defs


def test_definitions_load_with_every_asset_job_and_sensor():
    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {
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
        "answer_judgements",
        "leaderboard",
    }
    for job in ("ingestion_job", "chunking_job", "evaluation_job", "leaderboard_job", "retention_job"):
        assert defs.resolve_job_def(job) is not None
    for sensor in ("partition_sync_sensor", "document_sensor", "automation_sensor"):
        assert defs.resolve_sensor_def(sensor).default_status == dg.DefaultSensorStatus.RUNNING
    assert defs.resolve_schedule_def("nightly_evaluation_schedule").default_status == (
        dg.DefaultScheduleStatus.RUNNING
    )
    # retention deletes history for good: a team switches it on
    assert defs.resolve_schedule_def("retention_schedule").default_status == dg.DefaultScheduleStatus.STOPPED


def test_evaluation_assets_are_partitioned_by_chunk_config_and_profile():
    graph = defs.resolve_asset_graph()
    partitions = graph.get(dg.AssetKey("retrieval_metrics")).partitions_def
    assert isinstance(partitions, dg.MultiPartitionsDefinition)
    for asset in ("answers", "answer_metrics"):
        assert graph.get(dg.AssetKey(asset)).partitions_def == partitions
    assert sorted(d.name for d in partitions.partitions_defs) == ["chunk_config", "profile"]
    assert all(
        isinstance(d.partitions_def, dg.DynamicPartitionsDefinition) for d in partitions.partitions_defs
    )
