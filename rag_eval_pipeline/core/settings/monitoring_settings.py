"""``data/monitoring.yaml``: how the evaluation keeps running: the nightly schedule, quick mode, the
regression checks against baselines, how long history is kept, and what the leaderboard ranks by.

Every key is optional; a project without the file gets the defaults below. Errors name the file and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import ConfigError
from ..metrics.names import (
    BUDGET_METRICS,
    CONTEXT_BUDGETS,
    KEYWORD,
    MRR,
    RANKABLE_METRICS,
    RECALL_AT_K,
    SEMANTIC_DYNAMIC,
    SPAN_IOU,
    SPAN_RECALL,
    budget_metric_name,
)
from .settings_file import require_integer, require_unit

EvaluationMode = Literal["quick", "full"]
EVALUATION_MODES: tuple[EvaluationMode, ...] = get_args(EvaluationMode)


@dataclass(frozen=True)
class NightlySettings:
    cron: str = "0 2 * * *"  # every partition is evaluated at 02:00
    timezone: str = "UTC"  # an IANA name such as Europe/Berlin
    mode: EvaluationMode = "full"
    # a partition whose documents, settings, code and models did not change since it last ran is not
    # evaluated again (false: every night evaluates every partition, a point per night in the history,
    # as a drifting model behind an API or a changed server only shows in a trend)
    skip_up_to_date: bool = True


@dataclass(frozen=True)
class QuickSettings:
    sample_size: int = 20  # quick mode evaluates a seeded sample of this many questions
    seed: int = 13


@dataclass(frozen=True)
class RegressionSettings:
    # A metric fails its check when its mean drops below the baseline's by more than `margin` AND the
    # paired bootstrap confidence interval of the difference lies entirely below 0.
    margin: float = 0.02
    confidence: float = 0.95
    metrics: tuple[str, ...] = (SPAN_RECALL, SPAN_IOU, RECALL_AT_K, MRR)
    answer_metrics: tuple[str, ...] = (KEYWORD, SEMANTIC_DYNAMIC)
    n_resamples: int = 2000
    seed: int = 7


@dataclass(frozen=True)
class RetentionSettings:
    full_rows_days: int = 30  # every per-question row is kept this long
    sampled_rows_days: int = 90  # then the summaries plus `sampled_rows` rows per file, until this age
    sampled_rows: int = 100  # after that only the summaries (aggregates) are kept
    seed: int = 11


@dataclass(frozen=True)
class LeaderboardSettings:
    """The objective the leaderboard ranks by (core/leaderboard/ranking.py) and its statistical tiers
    (core/leaderboard/tiers.py)."""

    # the mean over the questions of this per-question metric ...
    rank_by: str = SPAN_RECALL
    # ... measured on the first this-many tokens of each setup's context (one of CONTEXT_BUDGETS), so every
    # setup gets the same context; None: on all of its k chunks
    context_budget_tokens: int | None = 1000
    # a constraint: a setup whose k chunks hold more tokens than this on average is not ranked
    max_context_tokens: int | None = None
    # a constraint: a setup whose 95th-percentile search latency is above this (milliseconds) is not ranked
    max_p95_latency_ms: float | None = None
    # tier 1 is the best setup and every setup not significantly worse at this level (after Holm)
    alpha: float = 0.05
    # the cost columns' dollars (core/evaluation/costs.py): the model that would answer from each setup's context,
    # priced by core/llm/accounting.py and data/generation.yaml's llm.prices, and its answers' length
    generator_model: str = "gpt-4o-mini"
    answer_tokens: int = 200

    def __post_init__(self) -> None:
        if self.rank_by not in RANKABLE_METRICS:
            raise ConfigError(
                f"leaderboard.rank_by: unknown metric {self.rank_by!r}; one of {', '.join(RANKABLE_METRICS)}"
            )
        budget = self.context_budget_tokens
        if budget is not None and budget not in CONTEXT_BUDGETS:
            raise ConfigError(
                f"leaderboard.context_budget_tokens must be one of {', '.join(map(str, CONTEXT_BUDGETS))} "
                f"(tokens) or null (all k chunks), got {budget!r}"
            )
        if budget is not None and budget_metric_name(self.rank_by, budget) not in BUDGET_METRICS:
            measured = sorted(
                {m for m in RANKABLE_METRICS if budget_metric_name(m, budget) in BUDGET_METRICS}
            )
            raise ConfigError(
                f"leaderboard.context_budget_tokens: {self.rank_by} is not measured at a context budget "
                f"(only {', '.join(measured)} are); set context_budget_tokens: null to rank by "
                f"{self.rank_by} at each setup's k"
            )
        if self.max_context_tokens is not None:
            require_integer("leaderboard.max_context_tokens", self.max_context_tokens, 1)
        latency = self.max_p95_latency_ms
        if latency is not None and not latency > 0:
            raise ConfigError(
                f"leaderboard.max_p95_latency_ms must be a number of milliseconds > 0 or null, got {latency!r}"
            )
        if not self.generator_model.strip():
            raise ConfigError(
                f"leaderboard.generator_model must name a model of the price table (gpt-4o-mini, ...), "
                f"got {self.generator_model!r}"
            )
        require_integer("leaderboard.answer_tokens", self.answer_tokens, 0)
        if not 0 < self.alpha < 1:
            raise ConfigError(f"leaderboard.alpha must be in (0, 1), got {self.alpha!r}")

    @property
    def column(self) -> str:
        """The per-question column ranked by: ``span_recall_1000t``, or ``mrr`` (at each setup's k)."""
        budget = self.context_budget_tokens
        return budget_metric_name(self.rank_by, budget) if budget is not None else self.rank_by


@dataclass(frozen=True)
class MonitoringSettings:
    nightly: NightlySettings = field(default_factory=NightlySettings)
    quick: QuickSettings = field(default_factory=QuickSettings)
    regression: RegressionSettings = field(default_factory=RegressionSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    leaderboard: LeaderboardSettings = field(default_factory=LeaderboardSettings)
    source: str = field(default="(defaults)", compare=False)

    def __post_init__(self) -> None:
        n, q, r, k = self.nightly, self.quick, self.regression, self.retention
        if len(n.cron.split()) != 5:
            raise ConfigError(f"nightly.cron must be a five-field cron expression, got {n.cron!r}")
        try:
            ZoneInfo(n.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"nightly.timezone must be an IANA time zone such as UTC or Europe/Berlin, got {n.timezone!r}"
            ) from None
        require_integer("quick.sample_size", q.sample_size, 1)
        require_integer("quick.seed", q.seed, 0)
        require_unit("regression.margin", r.margin)
        if not 0.5 <= r.confidence < 1:
            raise ConfigError(f"regression.confidence must be in [0.5, 1), got {r.confidence!r}")
        _names("regression.metrics", r.metrics)
        _names("regression.answer_metrics", r.answer_metrics)
        require_integer("regression.n_resamples", r.n_resamples, 100)
        require_integer("regression.seed", r.seed, 0)
        require_integer("retention.full_rows_days", k.full_rows_days, 1)
        require_integer("retention.sampled_rows_days", k.sampled_rows_days, k.full_rows_days)
        require_integer("retention.sampled_rows", k.sampled_rows, 0)
        require_integer("retention.seed", k.seed, 0)


def _names(name: str, value: tuple[str, ...]) -> None:
    if not all(value):
        raise ConfigError(f"{name} must be a list of metric names, got {list(value)!r}")
