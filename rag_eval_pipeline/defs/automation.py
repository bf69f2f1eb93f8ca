"""How changes flow through the graph without anyone pressing a button.

The document sensor re-materializes the ingestion assets and the partition sync sensor adds partitions
(or re-chunks a changed config); from there every downstream asset follows its inputs: `eager` runs a
partition when an input partition updated, or when the partition is newly added, and never while an
input is missing or in progress. The summary assets over all partitions (judgements, the question set's
health, leaderboard) run once the partitions they read stopped changing: not `eager`, which waits for
EVERY input partition and so would never run while one partition is missing (GUIDE section 3).

A planned evaluation is left alone. `rag-eval run` (in process or `--launch`ed) and its `--resume` run
their own downstream stages, up to the leaderboard, and tag every run `rag_eval/planned`
(core/run_tags.PLANNED_EVALUATION_TAG). An input update counts here only if some run without
that tag made it since the last tick (`all_new_updates_have_run_tags`), so a `rag-eval run` over one
chunk config and profile while the daemon of `dagster dev` runs does not make automation recompute
every other partition downstream of the corpus it re-ingested. Those partitions stay as they were
(the UI shows them stale) until something else changes them: a document edit (the document sensor's
runs carry no such tag), a config change (partition sync sensor), the nightly schedule (its runs carry
an evaluation id but plan no leaderboard, so the leaderboard still follows them), or a `rag-eval run`
over them. A partition a run adds (`sync_configs`) is newly missing for automation as when the partition
sync sensor adds it: automation fills it, and may race with the run's own run of it once. Dagster reads
the tags of updates made after the last event the previous tick saw: on an instance whose first tick
saw no event at all, the first updates count whatever their tags (once; `dagster dev` soon has events,
the document sensor's first ingestion).
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from ..core.runs.run_tags import PLANNED_EVALUATION_TAG
from ..lib.freshness import SOURCES

# Dagster's `any_deps_updated`, except for updates that only runs of a planned evaluation made: those
# runs bring their own downstream runs.
DEPS_UPDATED_OUTSIDE_PLANS = dg.AutomationCondition.any_deps_match(
    (
        dg.AutomationCondition.newly_updated()
        & ~dg.AutomationCondition.executed_with_root_target()
        & ~dg.AutomationCondition.all_new_updates_have_run_tags(tag_keys={PLANNED_EVALUATION_TAG})
    ).with_label("newly_updated_outside_planned_evaluations")
    | dg.AutomationCondition.will_be_requested()
).with_label("any_deps_updated_outside_planned_evaluations")

# The sources (defs/ingestion/sources.py) are not inputs automation waits for or follows: an unobserved
# one would count as missing, and their changes arrive through the sensors, which run what they change.
_SOURCES = dg.AssetSelection.assets(*SOURCES)
FOLLOW_INPUTS = (
    dg.AutomationCondition.eager().replace("any_deps_updated", DEPS_UPDATED_OUTSIDE_PLANS).ignore(_SOURCES)
)
SUMMARIZE_WHEN_SETTLED = (
    (
        DEPS_UPDATED_OUTSIDE_PLANS.since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    )
    .with_label("summarize_when_settled")
    .ignore(_SOURCES)
)

# The question set's health also reads the corpus and the questions, but it summarizes the evaluation:
# it follows the evaluation partitions (which follow the questions), not the ingestion run, which would
# set it and the leaderboard off once more, on metrics of the questions before.
SUMMARIZE_EVALUATION_WHEN_SETTLED = SUMMARIZE_WHEN_SETTLED.ignore(
    dg.AssetSelection.assets("corpus", "eval_questions")
)

# corpus itself is requested by the document sensor (it reads files, which Dagster cannot watch)
_CONDITIONS: dict[str, dg.AutomationCondition] = {
    "synthetic_questions": FOLLOW_INPUTS,
    "eval_questions": FOLLOW_INPUTS,
    "answer_calibration": FOLLOW_INPUTS,
    "chunks": FOLLOW_INPUTS,
    "chunk_index": FOLLOW_INPUTS,
    "chunk_level_questions": FOLLOW_INPUTS,
    "retrieval_results": FOLLOW_INPUTS,
    "retrieval_metrics": FOLLOW_INPUTS,
    "answers": FOLLOW_INPUTS,
    "answer_metrics": FOLLOW_INPUTS,
    "retrieval_diagnostics": FOLLOW_INPUTS,
    "answer_judgements": SUMMARIZE_WHEN_SETTLED,
    "question_set_health": SUMMARIZE_EVALUATION_WHEN_SETTLED,
    "leaderboard": SUMMARIZE_WHEN_SETTLED,
}


def with_automation(assets: Sequence[dg.AssetsDefinition]) -> list[dg.AssetsDefinition]:
    """The assets with their automation conditions, kept here in one table rather than in every
    decorator, so how the graph reacts to change reads in one place."""

    def condition(spec: dg.AssetSpec) -> dg.AssetSpec:
        chosen = _CONDITIONS.get(spec.key.to_user_string())
        return spec if chosen is None else spec.replace_attributes(automation_condition=chosen)

    return [asset.map_asset_specs(condition) for asset in assets]


# Evaluates the conditions above every 30 s while the daemon runs (`dagster dev` starts one). Dagster's
# default automation sensor starts stopped; this one is on by default.
automation_sensor = dg.AutomationConditionSensorDefinition(
    "automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
