from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.metrics.context_budget import BUDGET_METRICS
from rag_eval_pipeline.core.metrics.names import CONTEXT_COST_METRICS, RANKABLE_METRICS, TOKEN_LEVEL_METRICS
from rag_eval_pipeline.core.settings.monitoring_settings import LeaderboardSettings, MonitoringSettings
from rag_eval_pipeline.core.settings.settings_file import load_settings

REPO = Path(__file__).resolve().parents[3]


def test_the_bundled_file_spells_out_the_defaults():
    settings = load_settings(REPO / "data/monitoring.yaml", MonitoringSettings)
    assert settings == MonitoringSettings()
    assert settings.retention.full_rows_days == 30 and settings.retention.sampled_rows_days == 90
    assert settings.retention.sampled_rows == 100 and settings.nightly.cron == "0 2 * * *"


def test_a_missing_file_gives_the_defaults(tmp_path: Path):
    assert load_settings(tmp_path / "absent.yaml", MonitoringSettings) == MonitoringSettings()


def test_values_are_read(tmp_path: Path):
    path = tmp_path / "monitoring.yaml"
    path.write_text(
        "nightly: {timezone: Europe/Berlin, mode: quick}\n"
        "regression: {margin: 0.05, confidence: 1, metrics: [mrr]}\n"
        "retention: {full_rows_days: 7, sampled_rows_days: 7, sampled_rows: 0}\n"
    )
    with pytest.raises(ConfigError, match="regression.confidence"):
        load_settings(path, MonitoringSettings)  # 1 is not a confidence level below 1
    path.write_text(path.read_text().replace("confidence: 1", "confidence: 0.9"))
    settings = load_settings(path, MonitoringSettings)
    assert settings.nightly.timezone == "Europe/Berlin" and settings.nightly.mode == "quick"
    assert settings.regression.metrics == ("mrr",) and settings.regression.margin == 0.05
    assert settings.retention.sampled_rows == 0


def test_the_objectives_constraints_and_cost_assumptions_are_read(tmp_path: Path):
    path = tmp_path / "monitoring.yaml"
    path.write_text(
        "leaderboard: {max_p95_latency_ms: 250, generator_model: gpt-4.1-mini, answer_tokens: 400}\n"
    )
    board = load_settings(path, MonitoringSettings).leaderboard
    assert (board.max_p95_latency_ms, board.generator_model, board.answer_tokens) == (
        250.0,
        "gpt-4.1-mini",
        400,
    )
    assert (board.max_context_tokens, board.rank_by) == (None, "span_recall")


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
        (
            "leaderboard: {rank_by: relevance}\n",
            "leaderboard.rank_by: unknown metric 'relevance'; one of span_recall",
        ),
        (
            "leaderboard: {context_budget_tokens: -500}\n",
            "leaderboard.context_budget_tokens must be one of 500",
        ),
        ("leaderboard: {context_budget_tokens: 750}\n", "leaderboard.context_budget_tokens must be one of"),
        (
            "leaderboard: {rank_by: mrr}\n",
            "leaderboard.context_budget_tokens: mrr is not measured at a context",
        ),
        ("leaderboard: {max_context_tokens: -1}\n", "leaderboard.max_context_tokens must be an integer >= 1"),
        ("leaderboard: {max_context_tokens: 4k}\n", "leaderboard.max_context_tokens must be an integer"),
        ("leaderboard: {alpha: 0}\n", r"leaderboard.alpha must be in \(0, 1\)"),
        (
            "leaderboard: {max_p95_latency_ms: 0}\n",
            "leaderboard.max_p95_latency_ms must be a number of milli",
        ),
        ("leaderboard: {max_p95_latency_ms: fast}\n", "leaderboard.max_p95_latency_ms must be a number"),
        ("leaderboard: {generator_model: ' '}\n", "leaderboard.generator_model must name a model"),
        ("leaderboard: {answer_tokens: -1}\n", "leaderboard.answer_tokens must be an integer >= 0"),
        ("leaderboard: {max_latency_ms: 200}\n", "unknown key.*leaderboard.max_latency_ms"),
    ],
)
def test_errors_name_the_file_and_key(tmp_path: Path, text: str, message: str):
    path = tmp_path / "monitoring.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        load_settings(path, MonitoringSettings)
    assert str(path) in str(error.value)


def test_the_leaderboard_objective_is_read_and_names_its_column(tmp_path: Path):
    assert LeaderboardSettings().column == "span_recall_1000t"  # the default objective
    path = tmp_path / "monitoring.yaml"
    path.write_text("leaderboard: {rank_by: mrr, context_budget_tokens: null, max_context_tokens: 4000}\n")
    settings = load_settings(path, MonitoringSettings).leaderboard
    assert (settings.column, settings.max_context_tokens, settings.alpha) == ("mrr", 4000, 0.05)
    path.write_text("leaderboard: {rank_by: span_iou, context_budget_tokens: 2000, alpha: 0.01}\n")
    assert load_settings(path, MonitoringSettings).leaderboard.column == "span_iou_2000t"


def test_every_rankable_metric_and_budget_column_is_a_per_question_metric_of_the_evaluation():
    assert set(RANKABLE_METRICS) <= set(TOKEN_LEVEL_METRICS)
    # everything the evaluation scores is rankable, but the context's cost (lower is better)
    scored = set(TOKEN_LEVEL_METRICS) - set(BUDGET_METRICS) - set(CONTEXT_COST_METRICS)
    assert scored == set(RANKABLE_METRICS)
    for budget_column in BUDGET_METRICS:
        metric, budget = budget_column.rsplit("_", 1)
        assert LeaderboardSettings(metric, int(budget.removesuffix("t"))).column == budget_column
