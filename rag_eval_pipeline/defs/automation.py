"""How changes flow through the graph without anyone pressing a button.

The document sensor re-materializes the ingestion assets and the partition sync sensor adds partitions
(or re-chunks a changed config); from there every downstream asset follows its inputs: `eager` runs a
partition when an input partition updated, or when the partition is newly added, and never while an
input is missing or in progress. The summary assets over all partitions (judgements, leaderboard) run
once the partitions they read stopped changing: not `eager`, which waits for EVERY input partition and
so would never run while one partition is missing (GUIDE section 3).
"""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

FOLLOW_INPUTS = dg.AutomationCondition.eager()
SUMMARIZE_WHEN_SETTLED = (
    dg.AutomationCondition.any_deps_updated().since_last_handled()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("summarize_when_settled")

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
    "answer_judgements": SUMMARIZE_WHEN_SETTLED,
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
