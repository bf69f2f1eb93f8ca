"""The sources are observable: the UI's "Observe sources" records the versions `rag-eval run` and the
sensors record (core/project/source_versions.py), and Dagster's staleness reads them (defs/ingestion/sources.py)."""

from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.project.source_versions import source_versions
from rag_eval_pipeline.core.runs.run_tags import DATA_VERSION_TAG
from rag_eval_pipeline.defs.ingestion.sources import SOURCE_ASSETS
from rag_eval_pipeline.lib.freshness import SOURCES, source_observations
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.instances import instance_for_tests


def test_observing_the_sources_records_the_versions_rag_eval_run_records(tiny_project: Path) -> None:
    project = ProjectResource(root=str(tiny_project))
    defs = dg.Definitions(assets=SOURCE_ASSETS, resources={"project": project})
    graph = defs.resolve_asset_graph()
    assert all(graph.get(key).is_observable for key in SOURCES)
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["fixed-60-0", "recursive-120-20"])
        instance.add_dynamic_partitions("profile", ["top2", "top4"])
        job = defs.resolve_implicit_global_asset_job_def()
        assert job.execute_in_process(instance=instance, asset_selection=list(SOURCES)).success
        observed = sorted(
            (key.to_user_string(), r.partition_key, r.asset_observation.tags.get(DATA_VERSION_TAG))
            for key in SOURCES
            for r in instance.fetch_observations(key, limit=10).records
            if r.asset_observation is not None
        )
    expected = source_observations(source_versions(project.files()))
    assert observed == sorted(
        (key.to_user_string(), partition, version) for key, partition, version in expected
    )
    assert len(observed) == 8  # documents, settings, 2 chunk configs, 2 profiles, setups, objective
