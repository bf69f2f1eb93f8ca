"""How change flows through the graph: the automation conditions evaluated as the daemon would."""

from collections.abc import Iterable

import dagster as dg

from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.defs.automation import automation_sensor

INGESTION = ("corpus", "synthetic_questions", "eval_questions", "answer_calibration")
EVALUATION = ("retrieval_results", "retrieval_metrics", "answers", "answer_metrics")


def evaluate_tick(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    after: dg.EvaluateAutomationConditionsResult | None = None,
) -> dg.EvaluateAutomationConditionsResult:
    """One evaluation of the automation sensor over the assets it selects, after the tick ``after``."""
    return dg.evaluate_automation_conditions(
        defs=defs,
        instance=instance,
        asset_selection=automation_sensor.asset_selection,
        cursor=after.cursor if after is not None else None,
    )


def requested(result: dg.EvaluateAutomationConditionsResult) -> dict[str, set[str]]:
    """asset -> the partitions (or {""} for an unpartitioned asset) the tick would run."""
    out: dict[str, set[str]] = {}
    for r in result.results:
        partitions = result.get_requested_partitions(r.key)
        if partitions:
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
        first = evaluate_tick(defs, instance)
        assert requested(first) == {}  # partitions that existed before are not run by themselves

        materialized(instance, INGESTION, [None])
        tick = evaluate_tick(defs, instance, first)
        # chunk sets follow the corpus; evaluation waits while its chunk index is being rebuilt
        assert requested(tick) == {
            "chunks": {"a", "b"},
            "chunk_index": {"a", "b"},
            "chunk_level_questions": {"a", "b"},
        }

        materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a", "b"])
        tick = evaluate_tick(defs, instance, tick)
        assert requested(tick) == {asset: {"a|p", "b|p"} for asset in EVALUATION}

        materialized(instance, EVALUATION, ["a|p"])
        materialized(instance, ("retrieval_results", "retrieval_metrics"), ["b|p"])
        # nothing is in progress, so the summaries refresh with the partitions that have landed
        tick = evaluate_tick(defs, instance, tick)
        assert {"leaderboard", "answer_judgements"} <= set(requested(tick))

        materialized(instance, ("answer_judgements", "leaderboard"), [None])
        quiet = evaluate_tick(defs, instance, tick)
        assert requested(quiet) == {}  # nothing changed: nothing runs


def test_a_new_profile_runs_only_its_own_partitions():
    defs = build_definitions()
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("chunk_config", ["a", "b"])
        instance.add_dynamic_partitions("profile", ["p"])
        materialized(instance, INGESTION, [None])
        materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a", "b"])
        materialized(instance, EVALUATION, ["a|p", "b|p"])
        materialized(instance, ("answer_judgements", "leaderboard"), [None])
        first = evaluate_tick(defs, instance)
        assert requested(first) == {}

        instance.add_dynamic_partitions("profile", ["q"])
        tick = evaluate_tick(defs, instance, first)
        assert requested(tick) == {asset: {"a|q", "b|q"} for asset in EVALUATION}

        instance.add_dynamic_partitions("chunk_config", ["c"])
        tick = evaluate_tick(defs, instance, tick)
        assert requested(tick) == {
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
        first = evaluate_tick(defs, instance)
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
        waiting = evaluate_tick(defs, instance, first)
        assert "leaderboard" not in requested(waiting)
