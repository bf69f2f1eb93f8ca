"""The tag keys are an interface with what an instance already holds: `rag-eval run --resume`, `status`,
`list` and `cancel` read the tags of runs an earlier version wrote, and Dagster sets and reads its own.
So their spelling is pinned here, once, against core/runs/run_tags.py (the only module that spells them)."""

import dagster as dg

from rag_eval_pipeline.core.runs import run_tags
from rag_eval_pipeline.lib.partitions import evaluation_partitions

SPELLING = {
    "EVALUATION_ID_TAG": "rag_eval/evaluation_id",
    "MODE_TAG": "rag_eval/mode",
    "PLANNED_EVALUATION_TAG": "rag_eval/planned",
    "PLAN_CHUNK_CONFIGS_TAG": "rag_eval/chunk_configs",
    "PLAN_PROFILES_TAG": "rag_eval/profiles",
    "SAMPLE_SIZE_TAG": "rag_eval/sample_size",
    "COMMAND_TAG": "rag_eval/command",
    "REGENERATE_COMMAND": "regenerate-questions",
    "SEARCH_COMMAND": "search",
    "REGENERATE_DOCUMENTS_TAG": "rag_eval/regenerate_documents",
    "TRIGGER_TAG": "rag_eval/trigger",
    "CLI_TRIGGER": "cli",
    "API_TRIGGER": "api",
    "TRIGGERED_BY_TAG": "rag_eval/triggered_by",
    "PROFILE_SNAPSHOT_TAG": "rag_eval/profile_snapshot",
    "QUESTION_COUNT_TAG": "rag_eval/question_count",
    "QUESTION_SAMPLE_TAG": "rag_eval/question_sample",
    "CANCEL_TAG": "rag_eval/cancel_requested",
    "PROCESS_TAG": "rag_eval/process",
    "DOCUMENTS_TAG_PREFIX": "rag_eval/documents_",
    "REASON_TAG": "rag_eval/reason",
    "KIND_TAG": "rag_eval/kind",
    "MAINTENANCE_KIND": "maintenance",
    "PARTITION_TAG": "dagster/partition",
    "MULTI_PARTITION_TAG_PREFIX": "dagster/partition/",
    "SCHEDULE_TAG": "dagster/schedule_name",
    "SENSOR_TAG": "dagster/sensor_name",
    "BACKFILL_TAG": "dagster/backfill",
    "AUTOMATION_TAG": "dagster/from_automation_condition",
    "USER_TAG": "user",
    "DATA_VERSION_TAG": "dagster/data_version",
    "CODE_VERSION_TAG": "dagster/code_version",
    "INPUT_POINTER_TAG": "dagster/input_event_pointer/",
}


def test_every_tag_key_keeps_its_spelling() -> None:
    spelled = {name: value for name, value in vars(run_tags).items() if name.isupper()}
    assert spelled == SPELLING


def test_dagsters_partition_tags_are_the_ones_spelled_here() -> None:
    key = dg.MultiPartitionKey({"chunk_config": "fixed-60-0", "profile": "top2"})
    assert evaluation_partitions.get_tags_for_partition_key(key) == {
        run_tags.PARTITION_TAG: "fixed-60-0|top2",
        f"{run_tags.MULTI_PARTITION_TAG_PREFIX}chunk_config": "fixed-60-0",
        f"{run_tags.MULTI_PARTITION_TAG_PREFIX}profile": "top2",
    }
