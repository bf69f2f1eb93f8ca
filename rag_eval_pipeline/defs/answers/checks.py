"""The regression check on answer_metrics: each evaluated partition against its baseline
(lib/regression_checks.py says how the baseline is chosen and the verdict reached)."""

import dagster as dg
import pandas as pd

from ...core.settings.monitoring_settings import MonitoringSettings
from ...lib.io_managers import WarehouseResource
from ...lib.partitions import evaluation_check
from ...lib.regression_checks import regression_check
from ...lib.resources import ProjectResource
from ...lib.step_inputs import step_settings
from ...lib.step_redaction import redacts_secrets
from .assets import answer_metrics


@evaluation_check(
    asset=answer_metrics,
    name="regression",
    description="No answer metric (regression.answer_metrics) dropped below the partition's baseline by "
    "more than the margin with its paired bootstrap interval below 0; only questions where the metric is "
    "ok in both runs count.",
)
@redacts_secrets
def answer_metrics_regression(
    context: dg.AssetCheckExecutionContext,
    project: ProjectResource,
    warehouse: WarehouseResource,
    answer_metrics: pd.DataFrame,
) -> dg.AssetCheckResult:
    settings = step_settings(project, MonitoringSettings)
    metrics = settings.regression.answer_metrics
    return regression_check(context, warehouse, "answer_metrics", answer_metrics, metrics, settings)
