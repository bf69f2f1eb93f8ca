"""LangSmith as an optional mirror of our datasets and experiments (no Dagster here).

Every failure raises ``LangSmithError``, whose message says what to check and never holds the API key.
"""

from __future__ import annotations

from .datasets import UploadReport, download_dataset, upload_dataset
from .errors import LangSmithDatasetError, LangSmithError
from .experiments import ExperimentReport, ExperimentRow, log_experiment
from .settings import LangSmithSettings

__all__ = [
    "ExperimentReport",
    "ExperimentRow",
    "LangSmithDatasetError",
    "LangSmithError",
    "LangSmithSettings",
    "UploadReport",
    "download_dataset",
    "log_experiment",
    "upload_dataset",
]
