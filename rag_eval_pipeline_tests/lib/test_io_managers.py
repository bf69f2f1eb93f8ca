"""The IO manager stores each asset where core/store/warehouse.py says (current file plus the run's history
file, for no, one and two partition dimensions) and loads it back from there; the layout itself is
tested in core/store/test_warehouse.py."""

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory, read_current_leaderboard
from rag_eval_pipeline_tests.instances import instance_for_tests

configs = dg.DynamicPartitionsDefinition(name="chunk_config")
profiles = dg.DynamicPartitionsDefinition(name="profile")
# declared profile first: the folders still follow Dagster's order, by dimension name
grid = dg.MultiPartitionsDefinition({"profile": profiles, "chunk_config": configs})


@dg.asset
def leaderboard() -> pd.DataFrame:
    return pd.DataFrame({"run_id": ["x"], "rank": [1]})


@dg.asset(partitions_def=configs)
def chunks(context: dg.AssetExecutionContext) -> pd.DataFrame:
    return pd.DataFrame({"chunk_config": [context.partition_key], "n": [3]})


@dg.asset(partitions_def=grid)  # reads its chunk_config's partition of chunks (Dagster infers it)
def scores(context: dg.AssetExecutionContext, chunks: pd.DataFrame) -> pd.DataFrame:
    key = context.partition_key
    assert isinstance(key, dg.MultiPartitionKey)
    return pd.DataFrame({"profile": [key.keys_by_dimension["profile"]], "n": chunks["n"] + 1})


@dg.asset(partitions_def=grid)
def summary(scores: pd.DataFrame) -> pd.DataFrame:
    return scores.assign(n=scores["n"] * 10)


def test_each_output_is_the_warehouse_s_current_file_and_the_run_s_history_file(tmp_path: Path):
    w = Warehouse(tmp_path / "warehouse")
    resources = {"io_manager": ParquetIOManagerFactory(base_dir=str(w.base_dir))}
    cell = {"chunk_config": "fixed-60-0", "profile": "top2"}
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["fixed-60-0"])
        instance.add_dynamic_partitions("profile", ["top2"])
        first = dg.materialize([leaderboard], instance=instance, resources=resources)
        second = dg.materialize([chunks], instance=instance, resources=resources, partition_key="fixed-60-0")
        third = dg.materialize(  # scores loads a chunks partition, summary a scores partition
            [chunks, scores, summary],
            selection=[scores, summary],
            instance=instance,
            resources=resources,
            partition_key=dg.MultiPartitionKey(cell),
        )
    written = [
        ("leaderboard", {}, first.run_id),
        ("chunks", {"chunk_config": "fixed-60-0"}, second.run_id),
        ("scores", cell, third.run_id),
        ("summary", cell, third.run_id),
    ]
    expected = [w.current_path(t, p) for t, p, _ in written] + [w.history_path(*args) for args in written]
    assert sorted(p for p in w.base_dir.rglob("*") if p.is_file()) == sorted(expected)
    for table in ("scores", "summary"):  # the path Dagster shows is the file written
        (materialization,) = third.asset_materializations_for_node(table)
        assert materialization.metadata["path"] == dg.MetadataValue.path(str(w.current_path(table, cell)))
    result = w.read_current("summary", cell)
    assert result is not None and result["n"].tolist() == [40]  # each input read from its partition file
    board = read_current_leaderboard(resources)
    assert board is not None and board["rank"].tolist() == [1]


def test_an_output_that_is_not_a_frame_fails_before_anything_is_written(tmp_path: Path):
    @dg.asset(name="leaderboard")
    def not_a_frame() -> list[int]:
        return [1]

    resources = {"io_manager": ParquetIOManagerFactory(base_dir=str(tmp_path))}
    with instance_for_tests() as instance, pytest.raises(TypeError, match="must return a pandas DataFrame"):
        dg.materialize([not_a_frame], instance=instance, resources=resources)
    assert read_current_leaderboard(resources) is None


def test_a_run_s_log_holds_no_debug_line_of_the_io_manager_only_its_events(tmp_path: Path):
    """UPathIOManager's "Loading 1 partitions...", "Loading file from", "Writing file at" lines would
    each be a stored event (28 of the 115 of an evaluation partition run): the IO manager drops them;
    Dagster's LOADED_INPUT / HANDLED_OUTPUT events stay, and so does a DEBUG line of the asset itself."""

    @dg.asset(partitions_def=grid)
    def noted(context: dg.AssetExecutionContext, scores: pd.DataFrame) -> pd.DataFrame:
        context.log.debug("the asset's own debug line")
        return scores

    resources = {"io_manager": ParquetIOManagerFactory(base_dir=str(tmp_path / "warehouse"))}
    key = dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"})
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["fixed-60-0"])
        instance.add_dynamic_partitions("profile", ["top2"])
        dg.materialize([chunks], instance=instance, resources=resources, partition_key="fixed-60-0")
        result = dg.materialize(
            [chunks, scores, noted],
            selection=[scores, noted],
            instance=instance,
            resources=resources,
            partition_key=key,
        )
        logs = instance.all_logs(result.run_id)
    lines = [e.user_message for e in logs if e.dagster_event is None]
    assert lines == ["the asset's own debug line"]
    kinds = [e.dagster_event.event_type_value for e in logs if e.dagster_event is not None]
    assert kinds.count("LOADED_INPUT") == 2 and kinds.count("HANDLED_OUTPUT") == 2


@dg.asset(ins={"scores": dg.AssetIn(metadata={"allow_missing_partitions": True})})
def board(scores: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Like the leaderboard and answer_judgements: one table per partition of a partitioned asset."""
    assert isinstance(scores, dict)
    return pd.DataFrame({"partition": sorted(scores), "n": [len(scores)] * len(scores)})


@pytest.mark.parametrize(
    ("chunk_configs", "profile_names"),
    [([], []), (["fixed-60-0"], ["top2"]), (["a", "b"], ["top2"])],
)
def test_an_input_over_every_partition_is_a_mapping_for_any_number_of_them(
    tmp_path: Path, chunk_configs: list[str], profile_names: list[str]
):
    """Dagster's UPathIOManager hands one partition over as a bare frame and none as None: a
    ``dict[str, DataFrame]`` input then fails its type check in a 1 x 1 workspace."""
    resources = {"io_manager": ParquetIOManagerFactory(base_dir=str(tmp_path / "warehouse"))}
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", chunk_configs)
        instance.add_dynamic_partitions("profile", profile_names)
        keys = [
            dg.MultiPartitionKey({"chunk_config": c, "profile": p})
            for c in chunk_configs
            for p in profile_names
        ]
        for config in chunk_configs:
            dg.materialize([chunks], instance=instance, resources=resources, partition_key=config)
        for key in keys:
            dg.materialize(
                [chunks, scores],
                selection=[scores],
                instance=instance,
                resources=resources,
                partition_key=key,
            )
        result = dg.materialize(
            [chunks, scores, board], selection=[board], instance=instance, resources=resources
        )
    frame = result.output_for_node("board")
    assert frame["partition"].tolist() == sorted(str(k) for k in keys)


def test_a_partition_written_again_in_its_evaluation_replaces_its_history_file(tmp_path: Path):
    """`run --resume` materializes a partition a killed run of the same evaluation wrote: its history
    holds the partition once for that evaluation; a run of another evaluation (or of none) adds its own."""
    from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG

    w = Warehouse(tmp_path / "warehouse")
    resources = {"io_manager": ParquetIOManagerFactory(base_dir=str(w.base_dir))}
    runs = []
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["fixed-60-0"])
        for evaluation in ("eval-a", "eval-a", "eval-b", None):
            tags = {EVALUATION_ID_TAG: evaluation} if evaluation else {}
            result = dg.materialize(
                [chunks], instance=instance, resources=resources, partition_key="fixed-60-0", tags=tags
            )
            runs.append(result.run_id)
    partition = {"chunk_config": "fixed-60-0"}
    assert sorted(w.history_files("chunks")) == sorted(
        w.history_path("chunks", partition, r) for r in runs[1:]
    )
