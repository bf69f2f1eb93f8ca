"""The Dagster code location: assets, jobs, the partition sync sensor, resources and IO."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import dagster as dg

warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)

from .assets.answers import answer_calibration, answer_judgements, answer_metrics, answers  # noqa: E402
from .assets.chunking import chunk_index, chunks  # noqa: E402
from .assets.evaluation import leaderboard, retrieval_metrics, retrieval_results  # noqa: E402
from .assets.generation import chunk_level_questions, synthetic_questions  # noqa: E402
from .assets.ingestion import corpus, eval_questions  # noqa: E402
from .automation import automation_sensor, with_automation  # noqa: E402
from .checks import REGRESSION_CHECKS  # noqa: E402
from .core.redaction import install_log_redaction  # noqa: E402
from .document_sensor import document_sensor  # noqa: E402
from .evaluation_runs import EvaluationModeResource  # noqa: E402
from .io_managers import ParquetIOManagerFactory, WarehouseResource  # noqa: E402
from .jobs import chunking_job, evaluation_job, ingestion_job, leaderboard_job  # noqa: E402
from .resources import default_resources  # noqa: E402
from .retention import retention_job, retention_schedule  # noqa: E402
from .schedules import nightly_evaluation_schedule  # noqa: E402
from .sensors import partition_sync_sensor  # noqa: E402


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
        asset_checks=list(REGRESSION_CHECKS),
        jobs=[ingestion_job, chunking_job, evaluation_job, leaderboard_job, retention_job],
        sensors=[partition_sync_sensor, document_sensor, automation_sensor],
        schedules=[nightly_evaluation_schedule, retention_schedule],
        resources=dict(resources),
    )


defs = build_definitions()
