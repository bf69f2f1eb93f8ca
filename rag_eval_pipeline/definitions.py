"""The Dagster code location: the definitions of defs/ (a folder per stage) with the resources of lib/.

Dagster loads it through ``defs`` (pyproject.toml's [tool.dg.project]); importing this module builds
nothing and reads no file.
"""

from __future__ import annotations

import gc

# Importing the code location creates about 300,000 objects that live as long as the process (Dagster,
# pandas, the package): no collection runs while they load, and at the end of this module they are
# frozen out of every later one (gc.freeze), the last at the interpreter's exit included. A process
# that imports the definitions saves ~0.5 CPU s: 2.29 -> 1.69 s for the import and exit alone.
_COLLECTING = gc.isenabled()
gc.disable()
YOUNG_COLLECTION_ALLOCATIONS = 10_000  # see the end of the module

try:
    import functools
    from collections.abc import Mapping

    import dagster as dg

    from .core.redaction import install_log_redaction
    from .defs.answers.assets import answer_calibration, answer_judgements, answer_metrics, answers
    from .defs.automation import automation_sensor, with_automation
    from .defs.chunking.assets import chunk_index, chunks
    from .defs.evaluation.assets import retrieval_metrics, retrieval_results
    from .defs.evaluation.diagnostics import retrieval_diagnostics
    from .defs.evaluation.nightly_schedule import build_nightly_schedule
    from .defs.ingestion.assets import corpus, eval_questions
    from .defs.ingestion.document_sensor import document_sensor
    from .defs.ingestion.partition_sync_sensor import partition_sync_sensor
    from .defs.ingestion.sources import SOURCE_ASSETS
    from .defs.jobs import chunking_job, evaluation_job, ingestion_job, leaderboard_job
    from .defs.maintenance.retention import build_retention_schedule, retention_job
    from .defs.questions.assets import chunk_level_questions, synthetic_questions
    from .defs.reporting.assets import leaderboard
    from .defs.reporting.question_health import question_set_health
    from .defs.search.assets import search_outcome, search_race
    from .defs.search.search_job import search_job, search_sensor
    from .lib.code_versions import with_code_versions
    from .lib.evaluation_runs import EvaluationModeResource
    from .lib.executor import rag_eval_executor
    from .lib.io_managers import ParquetIOManagerFactory, WarehouseResource
    from .lib.resources import ProjectResource, default_resources
    from .lib.schedule_settings import schedule_settings
except BaseException:  # a failed import (a code server reports it and goes on): collection as it was
    if _COLLECTING:
        gc.enable()
    raise


def build_definitions(resources: Mapping[str, object] | None = None) -> dg.Definitions:
    """The project's definitions; tests and `rag-eval` pass other resources (paths, stores)."""
    install_log_redaction()  # every log line of this process, `context.log` included, without secrets
    if resources is None:
        resources = {
            **default_resources(),
            "io_manager": ParquetIOManagerFactory(),
            "warehouse": WarehouseResource(),
        }
    # quick or full mode is chosen per run by run config on this resource
    resources = {"evaluation": EvaluationModeResource(), **resources}
    project = resources.get("project")
    # Dagster takes a schedule's cron and time zone when the definitions are built, so the project's
    # data/monitoring.yaml is read here, once per load of the code location
    settings = schedule_settings(project if isinstance(project, ProjectResource) else ProjectResource())
    assets = with_automation(
        with_code_versions(
            [
                corpus,
                synthetic_questions,
                eval_questions,
                answer_calibration,
                chunks,
                chunk_index,
                chunk_level_questions,
                retrieval_results,
                retrieval_metrics,
                answers,
                answer_metrics,
                retrieval_diagnostics,
                answer_judgements,
                question_set_health,
                leaderboard,
            ],
            resources,
        )
    )
    # not automated: a search runs when asked for (defs/search/search_job.py)
    searched = with_code_versions([search_outcome], resources)
    built: list[dg.Definitions] = []  # the nightly schedule judges freshness by these definitions
    definitions = dg.Definitions(
        assets=[*SOURCE_ASSETS, *assets, search_race, *searched],
        jobs=[ingestion_job, chunking_job, evaluation_job, leaderboard_job, retention_job, search_job],
        sensors=[partition_sync_sensor, document_sensor, automation_sensor, search_sensor],
        schedules=[
            build_nightly_schedule(settings, lambda: built[0]),
            # in the nightly schedule's time zone: "03:00, after the 02:00 evaluation" holds wherever
            build_retention_schedule(settings.nightly.timezone),
        ],
        resources=dict(resources),
        # a materialization from the asset graph (not one of the jobs) runs its steps as the jobs do: in
        # one process, or on Dask workers when configured (Dagster's default starts a process per step)
        executor=rag_eval_executor,
    )
    built.append(definitions)
    return definitions


@dg.definitions
def defs() -> dg.Definitions:
    """What `dagster dev` and `dg check defs` load: the definitions with the default resources."""
    return build_definitions()


@functools.cache
def job_named(name: str) -> dg.JobDefinition:
    """The job ``name`` of the default definitions, built once per process: what a Dask worker (and
    `rag-eval run` handing its steps to one) reconstructs, by module and function name, to run a step."""
    return build_definitions().resolve_job_def(name)


gc.freeze()
if _COLLECTING:
    gc.enable()
# A run allocates millions of short-lived containers (events, records, frames): at Python's default of
# 700 allocations a young-generation collection, a cold demo run collected 2,600 times and the whole heap
# 22 times, 1.8 CPU s; at 10,000 it collects the heap once, 0.6 CPU s. A higher setting is kept.
gc.set_threshold(max(gc.get_threshold()[0], YOUNG_COLLECTION_ALLOCATIONS), *gc.get_threshold()[1:])
