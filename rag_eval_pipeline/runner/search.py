"""`rag-eval search`: the search job in process on the project's instance (so the UI shows its race), the
ingestion first when the evaluation's questions were never materialized."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ..core.runs.run_tags import COMMAND_TAG, SEARCH_COMMAND
from ..lib.run_record import cli_trigger_tags
from .in_process import QUIET_LOGS, execute_in_process, process_tags, run_warnings
from .plan import STAGE_JOBS
from .run_failures import RunFailure, failure_of_result

SEARCH_JOB = "search_job"


@dataclass(frozen=True)
class SearchRun:
    run_id: str
    failure: RunFailure | None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The search's answer as the asset's ``outcome_text`` metadata says it."""
        return str(self.metadata.get("outcome_text", ""))

    @property
    def winning_tier(self) -> list[str]:
        """The race's survivors, the confirmed winner first (none when the budget stopped the search)."""
        named = str(self.metadata.get("winning_tier", "none"))
        return [] if named == "none" else named.split(", ")


def run_search_job(instance: dg.DagsterInstance, resources: Mapping[str, object] | None = None) -> SearchRun:
    """Materialize ``search_outcome`` in this process; ``ingestion_job`` first when ``eval_questions`` has
    never been materialized on this instance."""
    from ..definitions import build_definitions

    defs = build_definitions(resources)
    tags = {COMMAND_TAG: SEARCH_COMMAND, **process_tags(), **cli_trigger_tags()}
    if instance.get_latest_materialization_event(dg.AssetKey("eval_questions")) is None:
        print("the evaluation's questions were never made: running the ingestion first ...", file=sys.stderr)
        ingestion = execute_in_process(
            defs.resolve_job_def(STAGE_JOBS["ingestion"]),
            instance=instance,
            run_config=QUIET_LOGS,
            tags=tags,
            raise_on_error=False,
        )
        if not ingestion.success:
            return SearchRun(ingestion.run_id, failure_of_result(ingestion))
    result = execute_in_process(
        defs.resolve_job_def(SEARCH_JOB),
        instance=instance,
        run_config=QUIET_LOGS,
        tags=tags,
        raise_on_error=False,
    )
    for line in run_warnings(instance, result.run_id):
        print(f"warning: {line}", file=sys.stderr)
    if not result.success:
        return SearchRun(result.run_id, failure_of_result(result))
    (materialization,) = [  # the node also materializes the race's partitions (search_race)
        m
        for m in result.asset_materializations_for_node("search_outcome")
        if m.asset_key.path == ["search_outcome"]
    ]
    metadata = {k: getattr(v, "value", v) for k, v in materialization.metadata.items()}
    return SearchRun(result.run_id, None, metadata)
