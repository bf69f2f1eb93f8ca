"""Every Dagster tag key the project reads or writes, and the values it gives a few of them: the one place
they are spelled (rag_eval_pipeline_tests/test_layout.py checks that no other module spells one).

Tags are the project's interface with what is already on an instance: `rag-eval run --resume`,
`status`, `list` and `cancel` read the tags of runs written by earlier versions, and the UI, the GraphQL
API and the automation conditions filter on them. So a key here never changes spelling.

It lives in core/ (plain strings, no Dagster import) because every layer reads tags: the runner and the
command line (which import nothing of lib/ or defs/), lib/'s helpers, and the definitions.
"""

from __future__ import annotations

# --- The project's own run tags ---------------------------------------------------------------------

# The many runs of one evaluation share its id (core/runs/evaluation_ids.py; set by `rag-eval run` and the
# nightly schedule), and the mode they ran in (lib/evaluation_runs.py).
EVALUATION_ID_TAG = "rag_eval/evaluation_id"
MODE_TAG = "rag_eval/mode"
# On every run of a planned evaluation (`rag-eval run`, its resume and `--launch`: runner/plan.py), whose
# plan runs its own downstream stages up to the leaderboard: the automation conditions ignore what such
# a run updates (defs/automation.py), so the daemon does not recompute partitions it did not ask for.
PLANNED_EVALUATION_TAG = "rag_eval/planned"
# What an evaluation was asked to do, so `rag-eval run --resume` can plan it again (runner/plan.py).
PLAN_CHUNK_CONFIGS_TAG = "rag_eval/chunk_configs"
PLAN_PROFILES_TAG = "rag_eval/profiles"
SAMPLE_SIZE_TAG = "rag_eval/sample_size"

# The command a run was made for, where it is not an evaluation: the run of `rag-eval regenerate-questions`
# (runner/regenerate.py) is an explicit request to generate the synthetic questions, whether or not the
# evaluation uses them (defs/questions/assets.py); `rag-eval search` runs its own job (runner/search.py).
COMMAND_TAG = "rag_eval/command"
REGENERATE_COMMAND = "regenerate-questions"
SEARCH_COMMAND = "search"
# With it, the regenerate run makes the synthetic questions of these documents only (a JSON list of
# document ids) and keeps the others' (core/generation/regeneration.py).
REGENERATE_DOCUMENTS_TAG = "rag_eval/regenerate_documents"

# The run record (lib/run_record.py): how a run was triggered and by whom, the profiles it ran with, how
# many questions it evaluated and sampled.
TRIGGER_TAG = "rag_eval/trigger"
CLI_TRIGGER = "cli"  # TRIGGER_TAG's value on the runs `rag-eval` creates
API_TRIGGER = "api"  # ... and on those an HTTP API request creates (`rag-eval serve`; by: the token's name)
TRIGGERED_BY_TAG = "rag_eval/triggered_by"
PROFILE_SNAPSHOT_TAG = "rag_eval/profile_snapshot"
QUESTION_COUNT_TAG = "rag_eval/question_count"
QUESTION_SAMPLE_TAG = "rag_eval/question_sample"
# On every run of an evaluation `rag-eval cancel` stopped: "<UTC time> by <user@host>" (runner/cancel.py).
CANCEL_TAG = "rag_eval/cancel_requested"
# The process executing a run in `rag-eval`, so `status` and `list` can tell a killed run from a running
# one (runner/in_process.py, runner/run_status.py).
PROCESS_TAG = "rag_eval/process"

# The document sensor's run requests: which documents changed, one tag per kind of change
# ("rag_eval/documents_added", ..., and "rag_eval/documents_initial" on the first tick).
DOCUMENTS_TAG_PREFIX = "rag_eval/documents_"
# The partition sync sensor's run requests: why the partition runs again.
REASON_TAG = "rag_eval/reason"
# On the maintenance jobs (defs/maintenance/), so the run list can filter them out.
KIND_TAG = "rag_eval/kind"
MAINTENANCE_KIND = "maintenance"

# --- Dagster's own tags -----------------------------------------------------------------------------
# Dagster spells these in dagster._core.storage.tags, a private module the project does not import.

# A run's partition key ("<chunk_config>|<profile>" for the evaluation job); a multi-partitioned run also
# carries one tag per dimension, this prefix then the dimension's name.
PARTITION_TAG = "dagster/partition"
MULTI_PARTITION_TAG_PREFIX = "dagster/partition/"
# On the runs Dagster starts itself (lib/run_record.trigger_of reads them).
SCHEDULE_TAG = "dagster/schedule_name"
SENSOR_TAG = "dagster/sensor_name"
BACKFILL_TAG = "dagster/backfill"
AUTOMATION_TAG = "dagster/from_automation_condition"
USER_TAG = "user"  # the creator's e-mail, where the webserver knows it
# On a materialization or observation and its run: its data-version provenance (lib/freshness.py).
DATA_VERSION_TAG = "dagster/data_version"
CODE_VERSION_TAG = "dagster/code_version"
INPUT_POINTER_TAG = "dagster/input_event_pointer/"  # then the input asset's key
