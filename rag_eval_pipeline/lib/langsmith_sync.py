"""LangSmith from the Dagster layer: upload datasets and log experiments when configured, and report a
LangSmith failure in metadata instead of failing the asset."""

from __future__ import annotations

from typing import Any

import dagster as dg

from ..core.langsmith.datasets import upload_dataset
from ..core.langsmith.errors import LangSmithError
from ..core.langsmith.experiments import ExperimentRow
from ..core.langsmith.sink import LangSmithExperimentSink
from ..core.questions.datasets import ChunkLevelDataset, TokenLevelDataset
from .resources import LangSmithResource

NOT_CONFIGURED = "off (set LANGSMITH_API_KEY to upload datasets and log experiments)"


def upload(
    langsmith: LangSmithResource,
    dataset: TokenLevelDataset | ChunkLevelDataset,
    name: str,
    log: dg.DagsterLogManager,
    description: str = "",
) -> dict[str, dg.RawMetadataValue]:
    settings = langsmith.settings()
    if settings is None:
        return {"langsmith": NOT_CONFIGURED}
    try:
        report = upload_dataset(settings.client(), dataset, name, description)
    except LangSmithError as exc:
        log.warning(f"LangSmith upload of {name} failed; the dataset is kept locally: {exc}")
        return {"langsmith": f"upload failed: {exc}"}
    log.info(
        f"LangSmith dataset {name}: {report.created} created, {report.updated} updated, "
        f"{report.unchanged} unchanged"
    )
    metadata: dict[str, dg.RawMetadataValue] = {
        "langsmith": f"uploaded: {report.created} created, {report.updated} updated, {report.unchanged} unchanged",
        "langsmith_dataset": name,
    }
    if report.url:
        metadata["langsmith_dataset_url"] = dg.MetadataValue.url(report.url)
    return metadata


def log_experiment(
    langsmith: LangSmithResource,
    dataset_name: str,
    experiment_name: str,
    rows: list[ExperimentRow],
    experiment_metadata: dict[str, Any],
    log: dg.DagsterLogManager,
) -> tuple[str | None, dict[str, dg.RawMetadataValue]]:
    """The experiment's URL (None when off or failed) and the metadata that reports it."""
    settings = langsmith.settings()
    if settings is None:
        return None, {"langsmith": NOT_CONFIGURED}
    try:
        client = settings.client()
    except LangSmithError as exc:
        return None, {"langsmith": f"experiment not logged: {exc}"}
    sink = LangSmithExperimentSink(client, dataset_name, experiment_name, experiment_metadata)
    url = sink.log(rows)
    if sink.error is not None or sink.report is None:
        log.warning(f"LangSmith experiment {experiment_name} not logged; the metrics are kept: {sink.error}")
        return None, {"langsmith": f"experiment not logged: {sink.error}"}
    metadata: dict[str, dg.RawMetadataValue] = {
        "langsmith": f"experiment {experiment_name}: {sink.report.n_runs} runs, {sink.report.n_feedback} feedback",
    }
    if url:
        metadata["experiment_url"] = dg.MetadataValue.url(url)
    return url, metadata
