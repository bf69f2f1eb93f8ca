"""The Dagster code location: the definitions of defs/ (a folder per stage) with the resources of lib/."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import dagster as dg

warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)

from .core.redaction import install_log_redaction  # noqa: E402
from .defs.answers.assets import answer_calibration, answer_judgements, answer_metrics, answers  # noqa: E402
from .defs.answers.checks import answer_metrics_regression  # noqa: E402
from .defs.automation import automation_sensor, with_automation  # noqa: E402
from .defs.chunking.assets import chunk_index, chunks  # noqa: E402
from .defs.evaluation.assets import retrieval_metrics, retrieval_results  # noqa: E402
from .defs.evaluation.checks import retrieval_metrics_regression  # noqa: E402
from .defs.evaluation.nightly_schedule import nightly_evaluation_schedule  # noqa: E402
from .defs.ingestion.assets import corpus, eval_questions  # noqa: E402
from .defs.ingestion.document_sensor import document_sensor  # noqa: E402
from .defs.ingestion.partition_sync_sensor import partition_sync_sensor  # noqa: E402
from .defs.jobs import chunking_job, evaluation_job, ingestion_job, leaderboard_job  # noqa: E402
from .defs.maintenance.retention import retention_job, retention_schedule  # noqa: E402
from .defs.questions.assets import chunk_level_questions, synthetic_questions  # noqa: E402
from .defs.reporting.assets import leaderboard  # noqa: E402
from .lib.evaluation_runs import EvaluationModeResource  # noqa: E402
from .lib.io_managers import ParquetIOManagerFactory, WarehouseResource  # noqa: E402
from .lib.resources import default_resources  # noqa: E402


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
    return dg.Definitions(
        assets=with_automation(
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
                answer_judgements,
                leaderboard,
            ]
        ),
        asset_checks=[retrieval_metrics_regression, answer_metrics_regression],
        jobs=[ingestion_job, chunking_job, evaluation_job, leaderboard_job, retention_job],
        sensors=[partition_sync_sensor, document_sensor, automation_sensor],
        schedules=[nightly_evaluation_schedule, retention_schedule],
        resources=dict(resources),
    )


defs = build_definitions()
