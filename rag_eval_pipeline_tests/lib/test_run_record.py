"""The run record read from a run's tags: who triggered it (rag-eval's own tag, else Dagster's tags for
schedules, sensors, backfills and the UI), the profiles at start, the questions it evaluated."""

import dagster as dg

from rag_eval_pipeline.core.runs.run_tags import (
    AUTOMATION_TAG,
    BACKFILL_TAG,
    PROFILE_SNAPSHOT_TAG,
    QUESTION_COUNT_TAG,
    QUESTION_SAMPLE_TAG,
    SCHEDULE_TAG,
    SENSOR_TAG,
    TRIGGER_TAG,
    TRIGGERED_BY_TAG,
    USER_TAG,
)
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.types import ProfileName
from rag_eval_pipeline.lib.run_record import RunFacts, cli_trigger_tags, profile_snapshot, trigger_of
from rag_eval_pipeline_tests.instances import instance_for_tests


def test_the_trigger_and_who_come_from_rag_evals_tag_or_dagsters() -> None:
    cli = cli_trigger_tags()
    assert cli[TRIGGER_TAG] == "cli" and "@" in cli[TRIGGERED_BY_TAG]
    assert trigger_of(cli) == ("cli", cli[TRIGGERED_BY_TAG])
    assert trigger_of({SCHEDULE_TAG: "nightly_evaluation_schedule"}) == (
        "schedule",
        "nightly_evaluation_schedule",
    )
    assert trigger_of({SENSOR_TAG: "document_sensor"}) == ("sensor", "document_sensor")
    assert trigger_of({AUTOMATION_TAG: "true"}) == ("sensor", "automation")
    assert trigger_of({BACKFILL_TAG: "abcdefgh", USER_TAG: "ada@example.com"}) == (
        "ui",
        "backfill abcdefgh by ada@example.com",
    )
    assert trigger_of({}) == ("ui", "launchpad or GraphQL API")


def test_profile_snapshot_and_question_counts_round_trip_through_tags() -> None:
    profiles = [
        RetrievalProfile(ProfileName("top2"), top_k=2, version=3),
        RetrievalProfile(ProfileName("top4"), top_k=4, version=1),
    ]
    tags = {**profile_snapshot(profiles), QUESTION_COUNT_TAG: "85", QUESTION_SAMPLE_TAG: "20"}
    facts = RunFacts.of(tags)
    assert facts.profiles == {
        "top2": f"v3 {profiles[0].config_hash}",
        "top4": f"v1 {profiles[1].config_hash}",
    }
    assert (facts.question_count, facts.sample_size) == (85, 20)
    assert RunFacts.of({PROFILE_SNAPSHOT_TAG: "not json"}).profiles == {}


def test_an_evaluation_step_tags_the_run_it_executes_in() -> None:
    """A run started by the UI, a sensor or the schedule gets its record from its first evaluation step."""
    from rag_eval_pipeline.lib.run_record import record_step_facts

    profile = RetrievalProfile(ProfileName("top2"), top_k=2, version=1)

    @dg.op
    def step(context: dg.OpExecutionContext) -> None:
        record_step_facts(context, profile, question_count=4, sampled=2)  # type: ignore[arg-type]

    @dg.job
    def evaluation() -> None:
        step()

    with instance_for_tests() as instance:
        result = evaluation.execute_in_process(instance=instance)
        tags = instance.get_run_by_id(result.run_id).tags  # type: ignore[union-attr]
    facts = RunFacts.of(tags)
    assert facts.profiles == {"top2": f"v1 {profile.config_hash}"}
    assert (facts.question_count, facts.sample_size, facts.trigger) == (4, 2, "ui")
