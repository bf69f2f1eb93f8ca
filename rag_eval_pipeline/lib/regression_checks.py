"""How a metrics asset's regression check decides: the partition's rows against its baseline.

The baseline is the partition's pinned run (`rag-eval baseline set`), else its previous full run on the
same dataset. A metric that dropped by more than ``regression.margin`` (data/monitoring.yaml) with its
paired bootstrap interval entirely below 0 fails the check with severity ERROR; the numbers are in the
check's metadata.

A check runs in its asset's step (``metrics_asset``): the asset's output is stored first, then its rows
are checked, with no step, no input load and no events of its own (a partition run had seven steps and
98 events, now five and 90). The asset is subsettable, so the check still runs alone (the UI's "Execute"
on the check, after `rag-eval baseline set`): it then checks the partition's stored rows.
"""

import functools
import inspect
import math
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import dagster as dg
import pandas as pd

from ..core.errors import ConfigError
from ..core.evaluation.baselines import BaselineChoice, BaselineStore, choose_baseline
from ..core.evaluation.regression import RegressionVerdict, regression_verdict
from ..core.settings.monitoring_settings import MonitoringSettings, RegressionSettings
from ..core.store.history import HistoryStore, PartitionKey
from ..core.store.table_upgrades import upgraded
from ..core.text_table import format_number, markdown_table
from .io_managers import WarehouseResource
from .metric_metadata import metric_value
from .partitions import CHUNK_CONFIG, PROFILE, evaluation_partitions
from .step_failures import input_errors_fail_the_step
from .step_inputs import step_settings
from .step_redaction import redacts_secrets

REGRESSION = "regression"  # the check's name on either metrics asset

MetricsBody = Callable[..., dg.MaterializeResult]


def metrics_asset(check_description: str, **asset_args: Any) -> Callable[[MetricsBody], dg.AssetsDefinition]:
    """``@dg.asset`` for a metrics table of an evaluation partition (named for the function, which takes
    the ``project`` and ``warehouse`` resources and returns the table as a ``MaterializeResult``), with
    its ``regression`` check in the same step. ``asset_args``: the asset's group_name, kinds, deps, pool.

    A multi-asset underneath, as Dagster lets only those run a check without its asset; partitioned
    checks are a Dagster preview feature, chosen for a verdict per partition (the UI, and GraphQL's
    ``assetCheckExecutions { evaluation { partition } }``): that PreviewWarning alone is acknowledged."""

    def decorate(body: MetricsBody) -> dg.AssetsDefinition:
        table = body.__name__
        key = dg.AssetKey(table)
        check_key = dg.AssetCheckKey(key, REGRESSION)

        @functools.wraps(body)  # Dagster reads the inputs and resources from the body's signature
        def step(context: dg.AssetExecutionContext, **inputs: Any) -> Iterator[Any]:
            warehouse, project = inputs["warehouse"], inputs["project"]
            if key in context.selected_asset_keys:
                result = body(context, **inputs)
                yield result  # stored before the check reads the partition's history
                now = upgraded(table, result.value)  # as a reader of the table gets the rows
            else:
                now = stored_rows(warehouse, table, context)
            if check_key in context.selected_asset_check_keys:
                yield regression_check(
                    context, warehouse, table, now, step_settings(project, MonitoringSettings)
                )

        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", "Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
            )
            check = dg.AssetCheckSpec(
                REGRESSION, asset=key, description=check_description, partitions_def=evaluation_partitions
            )
        out = dg.AssetOut(
            description=inspect.getdoc(body),
            group_name=asset_args.pop("group_name"),
            kinds=asset_args.pop("kinds"),
            is_required=False,  # not yielded when the check runs alone
        )
        return dg.multi_asset(
            name=table,
            outs={table: out},
            check_specs=[check],
            partitions_def=evaluation_partitions,
            can_subset=True,
            **asset_args,
        )(redacts_secrets(step))

    return decorate


def stored_rows(warehouse: WarehouseResource, table: str, context: dg.AssetExecutionContext) -> pd.DataFrame:
    """The partition's current rows, for its check run alone."""
    partition = partition_of(context)
    with input_errors_fail_the_step(f"{table} regression check of {partition}: "):
        rows = warehouse.layout().read_current(
            table, {CHUNK_CONFIG: partition.chunk_config, PROFILE: partition.profile}
        )
    if rows is None:
        raise dg.Failure(
            f"{table} of {partition} has never been materialized, so its regression check has nothing to "
            f"check: materialize {table} for the partition (its check runs with it)"
        )
    return rows


def regression_check(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    table: str,
    now: pd.DataFrame,
    settings: MonitoringSettings,
) -> dg.AssetCheckResult:
    """``now``: the partition's rows as the asset stored them (the run that wrote them is an earlier one
    than the check's own when the check runs alone). ``table``'s metrics: ``regression.answer_metrics``
    for answer_metrics, ``regression.metrics`` for retrieval_metrics."""
    regression = settings.regression
    metrics = regression.answer_metrics if table == "answer_metrics" else regression.metrics
    partition = partition_of(context)
    if now.empty:
        return dg.AssetCheckResult(
            passed=True,
            description=f"{table} of {partition} has no rows: nothing to check",
            metadata={"n_now": 0},
        )
    with input_errors_fail_the_step(f"{table} regression check of {partition}: "):
        missing = [m for m in metrics if m not in now.columns]
        if missing:
            key = "regression.answer_metrics" if table == "answer_metrics" else "regression.metrics"
            raise ConfigError(
                f"{settings.source}: {key} names {', '.join(missing)}, which {table} does not have; leave "
                "them out or use one of its metric columns"
            )
        first = now.iloc[0]  # in the current shape: read through the warehouse, or ``upgraded``
        run_id = str(first["run_id"])
        # the partition's own history only: the check's cost does not grow with other partitions' runs
        with HistoryStore(warehouse.base_dir, partition=partition) as history:
            choice = choose_baseline(
                history,
                BaselineStore(warehouse.base_dir),
                table,
                partition,
                run_id,
                str(first.get("dataset_sha256", "")),
                created_at(first),
                # answer scores compare only against the same reference answers
                str(first.get("answers_sha256", "")) if table == "answer_metrics" else None,
            )
            baseline = history.question_rows(table, [choice.run]) if choice.run is not None else None
        if baseline is not None:
            # a metric no file of this partition has reads as missing values (as over the whole table)
            baseline = baseline.assign(**{m: float("nan") for m in metrics if m not in baseline.columns})
        metadata = baseline_metadata(choice, run_id, first, len(now), regression)
        if baseline is None:
            passed = choice.source == "none"  # a pinned baseline without rows must not pass unnoticed
            (context.log.info if passed else context.log.warning)(f"{table} {partition}: {choice.detail}")
            return dg.AssetCheckResult(
                passed=passed,
                severity=dg.AssetCheckSeverity.WARN,
                description=choice.detail,
                metadata=metadata,
            )
        verdict = regression_verdict(now, baseline, metrics, regression)
    metadata.update(verdict_metadata(verdict))
    context.log.info(
        f"{table} {partition} vs {choice.source} baseline {metadata['baseline_run_id']}: {verdict.describe()}"
    )
    return dg.AssetCheckResult(
        passed=not verdict.failed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=verdict.describe(),
        metadata=metadata,
    )


def partition_of(context: dg.AssetExecutionContext) -> PartitionKey:
    key = context.partition_key
    if isinstance(key, dg.MultiPartitionKey):
        return PartitionKey(key.keys_by_dimension[CHUNK_CONFIG], key.keys_by_dimension[PROFILE])
    return PartitionKey.parse(str(key))


def created_at(row: pd.Series) -> datetime:
    value = pd.Timestamp(row["created_at"])
    return (value if value.tzinfo is not None else value.tz_localize("UTC")).to_pydatetime()


def baseline_metadata(
    choice: BaselineChoice, run_id: str, first: pd.Series, n_now: int, regression: RegressionSettings
) -> "dict[str, dg.RawMetadataValue]":
    run = choice.run
    return {
        "baseline_source": choice.source,
        "baseline_run_id": run.run_id if run is not None else "",
        "baseline_evaluation_id": run.evaluation_id if run is not None else "",
        "baseline_mode": run.mode if run is not None else "",
        "baseline_created_at": run.created_at.isoformat() if run is not None else "",
        "baseline_detail": choice.detail,
        "run_id": run_id,
        "evaluation_mode": str(first["evaluation_mode"]),
        "n_now": n_now,
        "margin": dg.MetadataValue.float(regression.margin),
        "confidence": dg.MetadataValue.float(regression.confidence),
    }


FIELDS = ("mean_baseline", "mean_now", "delta", "ci_low", "ci_high", "margin")


def verdict_metadata(verdict: RegressionVerdict) -> "dict[str, dg.RawMetadataValue]":
    """Flat numbers per metric (the UI plots them over time) and a table of all of them."""
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_baseline": verdict.n_baseline,
        "n_paired": verdict.n_shared,
        "failed_metrics": ", ".join(verdict.failed_metrics),
    }
    for m in verdict.metrics:
        for name in FIELDS:
            value = float(getattr(m, name))
            if not math.isnan(value):
                metadata[f"{m.metric}_{name}"] = metric_value(value)
        metadata[f"{m.metric}_n_paired"] = m.n_paired
        metadata[f"{m.metric}_failed"] = m.failed
    metadata["regression"] = dg.MetadataValue.md(verdict_markdown(verdict))
    return metadata


def verdict_markdown(verdict: RegressionVerdict) -> str:
    header = (
        "metric",
        "n paired",
        "baseline",
        "now",
        "delta",
        f"{verdict.confidence:.0%} CI",
        "margin",
        "verdict",
    )
    rows = []
    for m in verdict.metrics:
        ci = f"[{m.ci_low:+.4f}, {m.ci_high:+.4f}]" if m.comparable else "n/a"
        status = "FAILED" if m.failed else ("ok" if m.comparable else "too few pairs")
        rows.append(
            (
                m.metric,
                str(m.n_paired),
                format_number(m.mean_baseline),
                format_number(m.mean_now),
                format_number(m.delta, "+"),
                ci,
                str(m.margin),
                status,
            )
        )
    return markdown_table(header, rows)
