"""How change flows through the graph: the automation conditions evaluated as the daemon would."""

from collections.abc import Iterable
from datetime import UTC, datetime

import dagster as dg
from dagster._core.definitions.partitions.context import partition_loading_context

from rag_eval_pipeline.definitions import build_definitions

INGESTION = ("corpus", "synthetic_questions", "eval_questions", "answer_calibration")
EVALUATION = ("retrieval_results", "retrieval_metrics", "answers", "answer_metrics")


def requested(
    result: dg.EvaluateAutomationConditionsResult, instance: dg.DagsterInstance
) -> dict[str, set[str]]:
    """asset -> the partitions (or {""} for an unpartitioned asset) the tick would run."""
    out: dict[str, set[str]] = {}
    with partition_loading_context(datetime.now(UTC), instance):
        for r in result.results:
            if r.true_subset.size:
                partitions = result.get_requested_partitions(r.key)
                out[r.key.to_user_string()] = {str(p) if p is not None else "" for p in partitions}
    return out


def materialized(
    instance: dg.DagsterInstance, assets: Iterable[str], partitions: Iterable[str | None]
) -> None:
    for partition in partitions:
        for asset in assets:
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=asset, partition=partition))


def test_a_corpus_update_flows_down_to_the_leaderboard_one_layer_at_a_time():
    defs = build_definitions()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("chunk_config", ["a", "b"])
        instance.add_dynamic_partitions("profile", ["p"])
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert requested(first, instance) == {}  # partitions that existed before are not run by themselves

        materialized(instance, INGESTION, [None])
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        # chunk sets follow the corpus; evaluation waits while its chunk index is being rebuilt
        assert requested(tick, instance) == {
            "chunks": {"a", "b"},
            "chunk_index": {"a", "b"},
            "chunk_level_questions": {"a", "b"},
        }

        materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a", "b"])
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
        assert requested(tick, instance) == {asset: {"a|p", "b|p"} for asset in EVALUATION}

        materialized(instance, EVALUATION, ["a|p"])
        materialized(instance, ("retrieval_results", "retrieval_metrics"), ["b|p"])
        # nothing is in progress, so the summaries refresh with the partitions that have landed
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
        assert {"leaderboard", "answer_judgements"} <= set(requested(tick, instance))

        materialized(instance, ("answer_judgements", "leaderboard"), [None])
        quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
        assert requested(quiet, instance) == {}  # nothing changed: nothing runs


def test_a_new_profile_runs_only_its_own_partitions():
    defs = build_definitions()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("chunk_config", ["a", "b"])
        instance.add_dynamic_partitions("profile", ["p"])
        materialized(instance, INGESTION, [None])
        materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a", "b"])
        materialized(instance, EVALUATION, ["a|p", "b|p"])
        materialized(instance, ("answer_judgements", "leaderboard"), [None])
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert requested(first, instance) == {}

        instance.add_dynamic_partitions("profile", ["q"])
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        assert requested(tick, instance) == {asset: {"a|q", "b|q"} for asset in EVALUATION}

        instance.add_dynamic_partitions("chunk_config", ["c"])
        tick = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
        assert requested(tick, instance) == {
            "chunks": {"c"},
            "chunk_index": {"c"},
            "chunk_level_questions": {"c"},
        }


def test_summaries_wait_while_a_partition_is_running():
    defs = build_definitions()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("chunk_config", ["a"])
        instance.add_dynamic_partitions("profile", ["p", "q"])
        materialized(instance, INGESTION, [None])
        materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a"])
        materialized(instance, ("answer_judgements", "leaderboard"), [None])
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        materialized(instance, EVALUATION, ["a|p"])
        # a run for a|q is in progress: the leaderboard waits for it instead of refreshing twice
        job = defs.resolve_job_def("evaluation_job")
        run = instance.create_run_for_job(
            job,
            asset_selection=frozenset(dg.AssetKey(a) for a in EVALUATION),
            tags={
                "dagster/partition": "a|q",
                "dagster/partition/chunk_config": "a",
                "dagster/partition/profile": "q",
            },
            status=dg.DagsterRunStatus.STARTED,
        )
        assert run.status == dg.DagsterRunStatus.STARTED
        waiting = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        assert "leaderboard" not in requested(waiting, instance)
