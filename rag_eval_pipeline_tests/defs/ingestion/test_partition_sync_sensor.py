from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.defs.ingestion.partition_sync_sensor import partition_sync_sensor
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.instances import instance_for_tests


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
    with instance_for_tests() as instance:
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
        instance_for_tests() as instance,
        pytest.raises(ConfigError, match="chunk_configs.yaml.*rename it"),
    ):
        tick(instance, tiny_project, None)


def test_a_changed_config_reruns_its_partitions_and_nothing_else(tiny_project: Path):
    with instance_for_tests() as instance:
        first = tick(instance, tiny_project, None)
        assert not first.run_requests  # the first tick only records what the files say

        configs = tiny_project / "data/chunk_configs.yaml"
        configs.write_text(configs.read_text().replace("chunk_size: 120", "chunk_size: 140"))
        changed = tick(instance, tiny_project, first.cursor)
        (request,) = changed.run_requests or []
        assert (request.job_name, request.partition_key) == ("chunking_job", "recursive-120-20")
        assert not changed.dynamic_partitions_requests  # same name: no new partition

        profiles = tiny_project / "data/retrieval_profiles.yaml"
        profiles.write_text(profiles.read_text().replace("top_k: 4", "top_k: 3"))
        reprofiled = tick(instance, tiny_project, changed.cursor)
        assert sorted(str(r.partition_key) for r in reprofiled.run_requests or []) == [
            "fixed-60-0|top4",
            "recursive-120-20|top4",
        ]
        assert {r.job_name for r in reprofiled.run_requests or []} == {"evaluation_job"}

        # back to the first settings: a new run (run keys carry the hash, and Dagster never reuses one)
        configs.write_text(configs.read_text().replace("chunk_size: 140", "chunk_size: 120"))
        back = tick(instance, tiny_project, reprofiled.cursor)
        (again,) = back.run_requests or []
        assert again.partition_key == "recursive-120-20" and again.run_key != request.run_key
        assert not tick(instance, tiny_project, back.cursor).run_requests
        # and forth again: B's settings once more, a run key never used before
        configs.write_text(configs.read_text().replace("chunk_size: 120", "chunk_size: 140"))
        forth = tick(instance, tiny_project, back.cursor)
        (third,) = forth.run_requests or []
        assert third.run_key not in {request.run_key, again.run_key}


def test_a_cursor_from_before_per_config_hashes_is_read_as_no_history(tiny_project: Path):
    with instance_for_tests() as instance:
        old = tick(instance, tiny_project, "0" * 64)  # the old cursor: one hash of the files
        assert not old.run_requests and old.cursor and old.cursor.startswith("{")


def test_a_partition_already_made_with_the_new_settings_is_not_made_again(tiny_project: Path):
    """`rag-eval chunk-configs apply --run` re-chunks a changed config itself; the sensor then sees the
    file change, and must not run the same partition a second time."""
    with instance_for_tests() as instance:
        first = tick(instance, tiny_project, None)
        configs = tiny_project / "data/chunk_configs.yaml"
        configs.write_text(configs.read_text().replace("chunk_size: 120", "chunk_size: 140"))
        new_hash = ProjectResource(root=str(tiny_project)).load_configs().chunk_config("recursive-120-20")
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                "chunks", partition="recursive-120-20", metadata={"chunk_config_hash": new_hash.config_hash}
            )
        )
        assert not tick(instance, tiny_project, first.cursor).run_requests

        # made with older settings: re-run
        configs.write_text(configs.read_text().replace("chunk_size: 140", "chunk_size: 160"))
        (request,) = tick(instance, tiny_project, first.cursor).run_requests or []
        assert request.partition_key == "recursive-120-20"

        # a changed profile: only the partitions not yet evaluated with it
        profiles = tiny_project / "data/retrieval_profiles.yaml"
        profiles.write_text(profiles.read_text().replace("top_k: 4", "top_k: 3"))
        top4 = ProjectResource(root=str(tiny_project)).load_configs().profile("top4")
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                "retrieval_results", partition="fixed-60-0|top4", metadata={"profile_hash": top4.config_hash}
            )
        )
        reprofiled = tick(instance, tiny_project, first.cursor)
        # fixed-60-0|top4 is current; recursive-120-20's partitions follow its re-chunk by automation
        assert [str(r.partition_key) for r in reprofiled.run_requests or []] == ["recursive-120-20"]


def test_the_sensor_reports_what_changed_as_observations_so_the_ui_shows_it_stale(tiny_project: Path):
    """Each chunk config's and profile's version, the settings' and the configured setups', once, and
    again only for what an edit changed (lib/freshness.py)."""

    def observed(result: dg.SensorResult) -> list[tuple[str, str | None]]:
        events = [e for e in result.asset_events or [] if isinstance(e, dg.AssetObservation)]
        for event in events:
            instance.report_runless_asset_event(event)  # as the daemon stores a tick's events
        return sorted((e.asset_key.to_user_string(), e.partition) for e in events)

    with instance_for_tests() as instance:
        first = tick(instance, tiny_project, None)
        assert observed(first) == [
            ("chunk_config_settings", "fixed-60-0"),
            ("chunk_config_settings", "recursive-120-20"),
            ("configured_setups", None),
            ("leaderboard_settings", None),
            ("project_settings", None),
            ("retrieval_profile_settings", "top2"),
            ("retrieval_profile_settings", "top4"),
        ]
        unchanged = tick(instance, tiny_project, first.cursor)
        assert observed(unchanged) == [] and unchanged.skip_reason is not None
        profiles = tiny_project / "data/retrieval_profiles.yaml"
        profiles.write_text(profiles.read_text().replace("top_k: 4", "top_k: 3"))
        assert observed(tick(instance, tiny_project, first.cursor)) == [
            ("retrieval_profile_settings", "top4")
        ]
