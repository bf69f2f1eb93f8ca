"""The regression check on retrieval_metrics: each evaluated partition against its baseline
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
from .assets import retrieval_metrics


@evaluation_check(
    asset=retrieval_metrics,
    name="regression",
    description="No retrieval metric (regression.metrics) dropped below the partition's baseline by more "
    "than the margin with its paired bootstrap interval below 0.",
)
@redacts_secrets
def retrieval_metrics_regression(
    context: dg.AssetCheckExecutionContext,
    project: ProjectResource,
    warehouse: WarehouseResource,
    retrieval_metrics: pd.DataFrame,
) -> dg.AssetCheckResult:
    settings = step_settings(project, MonitoringSettings)
    metrics = settings.regression.metrics
    return regression_check(context, warehouse, "retrieval_metrics", retrieval_metrics, metrics, settings)
