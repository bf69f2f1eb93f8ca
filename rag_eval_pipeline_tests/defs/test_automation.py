"""How change flows through the graph: the automation conditions evaluated as the daemon would."""

from collections.abc import Iterable
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.runs.run_tags import (
    DOCUMENTS_TAG_PREFIX,
    EVALUATION_ID_TAG,
    MODE_TAG,
    MULTI_PARTITION_TAG_PREFIX,
    PARTITION_TAG,
    PLAN_CHUNK_CONFIGS_TAG,
    PLAN_PROFILES_TAG,
    PLANNED_EVALUATION_TAG,
)
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.defs.automation import automation_sensor
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline.runner.in_process import sync_configs
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests

INGESTION = ("corpus", "synthetic_questions", "eval_questions", "answer_calibration")
EVALUATION = ("retrieval_results", "retrieval_metrics", "answers", "answer_metrics", "retrieval_diagnostics")
SUMMARIES = ("answer_judgements", "question_set_health", "leaderboard")


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
    with instance_for_tests() as instance:
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
        assert set(SUMMARIES) <= set(requested(tick))

        materialized(instance, SUMMARIES, [None])
        quiet = evaluate_tick(defs, instance, tick)
        assert requested(quiet) == {}  # nothing changed: nothing runs


def test_a_new_profile_runs_only_its_own_partitions():
    defs = build_definitions()
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["a", "b"])
        instance.add_dynamic_partitions("profile", ["p"])
        materialized(instance, INGESTION, [None])
        materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a", "b"])
        materialized(instance, EVALUATION, ["a|p", "b|p"])
        materialized(instance, SUMMARIES, [None])
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
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["a"])
        instance.add_dynamic_partitions("profile", ["p", "q"])
        materialized(instance, INGESTION, [None])
        materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a"])
        materialized(instance, SUMMARIES, [None])
        first = evaluate_tick(defs, instance)
        materialized(instance, EVALUATION, ["a|p"])
        # a run for a|q is in progress: the leaderboard waits for it instead of refreshing twice
        job = defs.resolve_job_def("evaluation_job")
        run = instance.create_run_for_job(
            job,
            asset_selection=frozenset(dg.AssetKey(a) for a in EVALUATION),
            tags={
                PARTITION_TAG: "a|q",
                f"{MULTI_PARTITION_TAG_PREFIX}chunk_config": "a",
                f"{MULTI_PARTITION_TAG_PREFIX}profile": "q",
            },
            status=dg.DagsterRunStatus.STARTED,
        )
        assert run.status == dg.DagsterRunStatus.STARTED
        waiting = evaluate_tick(defs, instance, first)
        assert "leaderboard" not in requested(waiting)


def materialized_by_run(
    instance: dg.DagsterInstance,
    assets: Iterable[str],
    partitions: Iterable[str | None],
    tags: dict[str, str],
) -> None:
    """The assets' partitions materialized by one real run carrying ``tags`` (a job of one op that
    reports them), as a run of the pipeline's jobs would leave them on the instance."""
    keys = [(asset, partition) for partition in partitions for asset in assets]

    @dg.op
    def report(context: dg.OpExecutionContext) -> None:
        for asset, partition in keys:
            context.log_event(dg.AssetMaterialization(asset_key=asset, partition=partition))

    @dg.job(name="reporting_job")
    def reporting() -> None:
        report()

    assert reporting.execute_in_process(instance=instance, tags=tags).success


def settled(instance: dg.DagsterInstance) -> None:
    """Two chunk configs x two profiles, every asset materialized once."""
    instance.add_dynamic_partitions("chunk_config", ["a", "b"])
    instance.add_dynamic_partitions("profile", ["p", "q"])
    materialized(instance, INGESTION, [None])
    materialized(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a", "b"])
    materialized(instance, EVALUATION, ["a|p", "a|q", "b|p", "b|q"])
    materialized(instance, SUMMARIES, [None])


PLANNED = {
    EVALUATION_ID_TAG: "20250101-000000-abcd",
    PLANNED_EVALUATION_TAG: "true",
    PLAN_CHUNK_CONFIGS_TAG: "a",
    PLAN_PROFILES_TAG: "p",
}


def test_a_planned_evaluation_sets_off_no_automation():
    """`rag-eval run -c a -p p` while the daemon runs: it re-ingests, re-chunks a, evaluates a|p and
    builds the leaderboard itself; automation requests nothing (not chunks b, not a|q, b|p, b|q)."""
    defs = build_definitions()
    with instance_for_tests() as instance:
        settled(instance)
        first = evaluate_tick(defs, instance)
        materialized_by_run(instance, INGESTION, [None], PLANNED)
        tick = evaluate_tick(defs, instance, first)
        assert requested(tick) == {}
        materialized_by_run(instance, ("chunks", "chunk_index", "chunk_level_questions"), ["a"], PLANNED)
        materialized_by_run(instance, EVALUATION, ["a|p"], PLANNED)
        materialized_by_run(instance, SUMMARIES, [None], PLANNED)
        tick = evaluate_tick(defs, instance, tick)
        assert requested(tick) == {}


def test_a_document_update_still_flows_down_during_a_planned_evaluation():
    """The document sensor's run (no planned tag) updates the corpus in the same tick as a planned
    evaluation's ingestion: the update is not the evaluation's, so every partition follows it (the
    evaluation partitions in the same tick as the chunk sets they read, which will be requested)."""
    defs = build_definitions()
    with instance_for_tests() as instance:
        settled(instance)
        first = evaluate_tick(defs, instance)
        materialized_by_run(instance, INGESTION, [None], {f"{DOCUMENTS_TAG_PREFIX}changed": "a.md"})
        materialized_by_run(instance, INGESTION, [None], PLANNED)
        tick = evaluate_tick(defs, instance, first)
        chunk_sets = ("chunks", "chunk_index", "chunk_level_questions")
        assert requested(tick) == {
            **{asset: {"a", "b"} for asset in chunk_sets},
            **{asset: {"a|p", "a|q", "b|p", "b|q"} for asset in EVALUATION},
        }


def test_the_leaderboard_follows_the_nightly_evaluation():
    """The nightly schedule's runs carry an evaluation id but plan no leaderboard: automation builds it."""
    defs = build_definitions()
    with instance_for_tests() as instance:
        settled(instance)
        first = evaluate_tick(defs, instance)
        nightly = {EVALUATION_ID_TAG: "nightly-20250101", MODE_TAG: "quick"}
        materialized_by_run(instance, EVALUATION, ["a|p", "a|q", "b|p", "b|q"], nightly)
        tick = evaluate_tick(defs, instance, first)
        assert set(requested(tick)) == set(SUMMARIES)


@pytest.mark.slow
def test_a_cli_run_while_the_daemon_runs_requests_nothing_it_did_not_ask_for(
    tiny_project: Path, tmp_path: Path
):
    """The recompute storm: `rag-eval run -c fixed-60-0 -p top2` on the instance `dagster dev` watches,
    then the automation sensor's tick: nothing for the partitions the run left alone, while a document
    edit afterwards still flows down to every chunk config."""
    resources = tiny_resources(tiny_project, tmp_path)
    defs = build_definitions(resources)
    with instance_for_tests() as instance:
        sync_configs(instance, ProjectResource(root=str(tiny_project)).load_configs())  # the sync sensor's
        # `dagster dev` has run a while: the document sensor's first ingestion (Dagster's run-tag
        # conditions read updates after the event the previous tick saw: with no event at all, every
        # update counts)
        materialized(instance, ("corpus",), [None])
        before = evaluate_tick(defs, instance)
        assert requested(before) == {}
        board, failures = evaluate_board(instance, ["fixed-60-0"], ["top2"], False, resources)
        assert failures == [] and board is not None
        after = evaluate_tick(defs, instance, before)
        assert requested(after) == {}

        materialized(instance, INGESTION, [None])  # the document sensor's run: no planned tag
        edited = evaluate_tick(defs, instance, after)
        assert requested(edited)["chunks"] == {"fixed-60-0", "recursive-120-20"}
