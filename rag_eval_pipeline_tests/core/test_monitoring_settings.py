from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.monitoring_settings import MonitoringSettings, load_monitoring_settings

REPO = Path(__file__).resolve().parents[2]


def test_the_bundled_file_spells_out_the_defaults():
    settings = load_monitoring_settings(REPO / "data/monitoring.yaml")
    assert settings == MonitoringSettings()
    assert settings.retention.full_rows_days == 30 and settings.retention.sampled_rows_days == 90
    assert settings.retention.sampled_rows == 100 and settings.nightly.cron == "0 2 * * *"


def test_a_missing_file_gives_the_defaults(tmp_path: Path):
    assert load_monitoring_settings(tmp_path / "absent.yaml") == MonitoringSettings()


def test_values_are_read(tmp_path: Path):
    path = tmp_path / "monitoring.yaml"
    path.write_text(
        "nightly: {timezone: Europe/Berlin, mode: quick}\n"
        "regression: {margin: 0.05, confidence: 1, metrics: [mrr]}\n"
        "retention: {full_rows_days: 7, sampled_rows_days: 7, sampled_rows: 0}\n"
    )
    with pytest.raises(ConfigError, match="regression.confidence"):
        load_monitoring_settings(path)  # 1 is not a confidence level below 1
    path.write_text(path.read_text().replace("confidence: 1", "confidence: 0.9"))
    settings = load_monitoring_settings(path)
    assert settings.nightly.timezone == "Europe/Berlin" and settings.nightly.mode == "quick"
    assert settings.regression.metrics == ("mrr",) and settings.regression.margin == 0.05
    assert settings.retention.sampled_rows == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nightly: {timezone: Mars/Olympus}\n", "nightly.timezone must be an IANA time zone"),
        ("nightly: {cron: 'every night'}\n", "nightly.cron must be a five-field cron"),
        ("nightly: {mode: fast}\n", "nightly.mode must be one of quick, full"),
        ("quick: {sample_size: 0}\n", "quick.sample_size must be an integer >= 1"),
        ("retention: {full_rows_days: 30, sampled_rows_days: 10}\n", "retention.sampled_rows_days .* >= 30"),
        ("regression: {metrics: mrr}\n", "regression.metrics must be a list"),
        ("regression: {margins: 0.1}\n", "unknown key.*regression.margins"),
        ("nightly: 2\n", "nightly must be a mapping"),
        ("schedule: {}\n", "unknown key.*schedule"),
    ],
)
def test_errors_name_the_file_and_key(tmp_path: Path, text: str, message: str):
    path = tmp_path / "monitoring.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        load_monitoring_settings(path)
    assert str(path) in str(error.value)
