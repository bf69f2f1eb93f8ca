"""The freshness rules one at a time, on a test instance: observations are recorded only for sources
whose version changed; a partition's inputs are the partitions Dagster maps to it; an asset never
materialized is stale and so is everything downstream of it in the same run."""

from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.project.source_versions import UNREADABLE, SourceVersions, source_versions
from rag_eval_pipeline.core.runs.run_tags import DATA_VERSION_TAG
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.evaluation_runs import evaluation_config_of, evaluation_run_config
from rag_eval_pipeline.lib.freshness import (
    CHUNK_CONFIG_SETTINGS,
    DOCUMENTS,
    changed_source_observations,
    input_partition,
    record_source_versions,
    stale_assets,
)
from rag_eval_pipeline.lib.partitions import (
    chunk_config_partitions,
    evaluation_partitions,
    profile_partitions,
)
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.instances import instance_for_tests


def test_only_changed_sources_are_observed_again(tiny_project: Path) -> None:
    versions = source_versions(ProjectResource(root=str(tiny_project)).files())
    assert versions.documents and versions.project_settings
    assert sorted(versions.chunk_configs) == ["fixed-60-0", "recursive-120-20"]
    with instance_for_tests() as instance:
        first = record_source_versions(instance, versions)
        # documents, settings, 2 chunk configs, 2 profiles, setups, the leaderboard's objective
        assert len(first) == 2 + 2 + 2 + 1 + 1
        assert changed_source_observations(instance, versions) == []
        edited = SourceVersions(
            "another",
            versions.project_settings,
            {**versions.chunk_configs, "fixed-60-0": "x"},
            versions.profiles,
        )
        again = changed_source_observations(instance, edited)
        assert [(o.asset_key, o.partition) for o in again] == [
            (DOCUMENTS, None),
            (CHUNK_CONFIG_SETTINGS, "fixed-60-0"),
        ]


def test_documents_version_is_the_corpus_data_version(tiny_project: Path) -> None:
    """The corpus asset's data version is the first characters of the corpus sha256: so is the
    documents source's, and a document edit changes it."""
    files = ProjectResource(root=str(tiny_project)).files()
    before = source_versions(files).documents
    assert before == files.load_corpus().sha256[:16]
    document = next((tiny_project / "data/corpus").rglob("*.md"))
    document.write_text(document.read_text(encoding="utf-8") + "\nmore\n", encoding="utf-8")
    assert source_versions(files).documents != before


def test_an_input_partition_is_the_one_dagster_maps() -> None:
    key = dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"})
    assert input_partition(chunk_config_partitions, key) == "fixed-60-0"
    assert input_partition(profile_partitions, key) == "top2"
    assert input_partition(chunk_config_partitions, "fixed-60-0|top2") == "fixed-60-0"
    assert input_partition(evaluation_partitions, key) == "fixed-60-0|top2"
    assert input_partition(None, key) is None
    assert input_partition(chunk_config_partitions, None) is None  # an unpartitioned asset reads them all


def test_never_materialized_is_stale_and_so_is_what_follows_it(tiny_project: Path, tmp_path: Path) -> None:
    defs = build_definitions(tiny_resources(tiny_project, tmp_path / "work"))
    with instance_for_tests() as instance:
        stale = stale_assets(instance, defs, ["chunks", "chunk_index"], "fixed-60-0")
    assert stale == {"chunks": "never materialized", "chunk_index": "chunks runs first"}


def test_every_asset_has_the_code_version_of_this_package(tiny_project: Path, tmp_path: Path) -> None:
    resources = tiny_resources(tiny_project, tmp_path / "work")
    graph = build_definitions(resources).resolve_asset_graph()
    versions = {graph.get(key).code_version for key in graph.materializable_asset_keys}
    assert len(versions) == 1 and None not in versions
    other_model = {**resources, "embedder": type(resources["embedder"])(provider="openai")}  # type: ignore[operator]
    graph_other = build_definitions(other_model).resolve_asset_graph()
    assert {graph_other.get(k).code_version for k in graph_other.materializable_asset_keys} != versions


def test_the_evaluation_config_of_a_run_fills_in_defaults() -> None:
    assert evaluation_config_of({}) == evaluation_config_of(evaluation_run_config("full"))
    assert evaluation_config_of(evaluation_run_config("quick", 5)) != evaluation_config_of(
        evaluation_run_config("quick", 6)
    )


def test_a_source_that_cannot_be_read_is_never_taken_as_unchanged(tiny_project: Path) -> None:
    """A broken settings file gets the version "unreadable": what reads it runs, and fails naming the
    file, instead of being skipped as up to date."""
    files = ProjectResource(root=str(tiny_project)).files()
    with instance_for_tests() as instance:
        record_source_versions(instance, source_versions(files))
        (tiny_project / "data/answer_evaluation.yaml").write_text(
            "semantic: [not, a, mapping]\n", encoding="utf-8"
        )
        broken = source_versions(files)
        assert broken.project_settings == UNREADABLE
        (observation,) = record_source_versions(instance, broken)
        assert observation.asset_key == dg.AssetKey("project_settings")
        assert observation.tags[DATA_VERSION_TAG] == UNREADABLE
        assert record_source_versions(instance, broken) == []  # still broken: nothing new to record
