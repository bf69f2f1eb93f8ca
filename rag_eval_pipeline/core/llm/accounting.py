"""Tokens and money: what a materialization used, what a planned one would cost, and the budget cap."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import ConfigError
from .base import ChatMessage


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6


# List prices at the time of writing; override or extend them in data/generation.yaml (llm.prices).
DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "smollm2-135m-instruct": Price(0.0, 0.0),
    # embedding models: input tokens only
    "text-embedding-3-small": Price(0.02, 0.0),
    "text-embedding-3-large": Price(0.13, 0.0),
    "text-embedding-ada-002": Price(0.10, 0.0),
}


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def price(self, model_name: str) -> Price | None:
        """Exact name first, then the longest known prefix (``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``)."""
        if model_name in self.prices:
            return self.prices[model_name]
        prefixes = [name for name in self.prices if model_name.startswith(name)]
        return self.prices[max(prefixes, key=len)] if prefixes else None

    def with_overrides(self, overrides: Mapping[str, Price]) -> PriceTable:
        return PriceTable({**self.prices, **overrides})


@dataclass(frozen=True)
class UsageSnapshot:
    calls: int
    cache_hits: int
    retries: int
    failures: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    throttled_s: float

    def as_metadata(self, prefix: str = "llm_") -> dict[str, float | int | None]:
        return {
            f"{prefix}calls": self.calls,
            f"{prefix}cache_hits": self.cache_hits,
            f"{prefix}retries": self.retries,
            f"{prefix}failures": self.failures,
            f"{prefix}prompt_tokens": self.prompt_tokens,
            f"{prefix}completion_tokens": self.completion_tokens,
            f"{prefix}cost_usd": self.cost_usd,
            f"{prefix}throttled_s": round(self.throttled_s, 3),
        }


class Usage:
    """Counters of one client, safe to update from its worker threads."""

    def __init__(self, price: Price | None) -> None:
        self._price = price
        self._lock = threading.Lock()
        self.calls = self.cache_hits = self.retries = self.failures = 0
        self.prompt_tokens = self.completion_tokens = 0

    def add(
        self,
        *,
        calls: int = 0,
        cache_hits: int = 0,
        retries: int = 0,
        failures: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        with self._lock:
            self.calls += calls
            self.cache_hits += cache_hits
            self.retries += retries
            self.failures += failures
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    def snapshot(self, throttled_s: float = 0.0) -> UsageSnapshot:
        with self._lock:
            cost = self._price.cost(self.prompt_tokens, self.completion_tokens) if self._price else None
            return UsageSnapshot(
                self.calls,
                self.cache_hits,
                self.retries,
                self.failures,
                self.prompt_tokens,
                self.completion_tokens,
                cost,
                throttled_s,
            )


def estimate_prompt_tokens(messages: Sequence[ChatMessage]) -> int:
    """About four characters a token for English, plus the chat format's few tokens a message."""
    return sum(len(m.content) // 4 + 4 for m in messages) + 3


@dataclass(frozen=True)
class CostEstimate:
    """An upper bound for the planned first requests: every reply assumed to use all of ``max_tokens``.
    Requests already in the response cache cost nothing and are not counted."""

    model_name: str
    n_requests: int
    n_cached: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None

    def describe(self) -> str:
        cost = "unknown cost" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        return (
            f"{self.n_requests - self.n_cached} of {self.n_requests} planned requests to {self.model_name} "
            f"are not cached: about {self.prompt_tokens} prompt and at most {self.completion_tokens} "
            f"completion tokens, {cost}"
        )


class BudgetExceeded(ConfigError):
    """The planned work would cost more than the cap: nothing was sent."""


def check_budget(estimate: CostEstimate, budget_usd: float | None) -> None:
    if budget_usd is None or estimate.n_requests == estimate.n_cached:
        return
    if estimate.cost_usd is None:
        raise BudgetExceeded(
            f"{estimate.describe()}; the model {estimate.model_name!r} has no price, so the budget cap "
            f"${budget_usd:.2f} cannot be checked: add it under llm.prices in data/generation.yaml "
            f"(input/output dollars per million tokens; 0 for a free local server) or set llm.budget_usd: null"
        )
    if estimate.cost_usd > budget_usd:
        raise BudgetExceeded(
            f"{estimate.describe()}, which exceeds the budget cap ${budget_usd:.4f} by "
            f"${estimate.cost_usd - budget_usd:.4f}; nothing was sent. Raise llm.budget_usd in "
            f"data/generation.yaml or ask for fewer questions"
        )


def check_total_budget(estimates: Sequence[CostEstimate], budget_usd: float | None) -> None:
    """One cap over several planned batches (several judge models, say), checked before any is sent."""
    for estimate in estimates:
        check_budget(estimate, budget_usd)  # each alone, and names a model without a price
    total = sum(e.cost_usd or 0.0 for e in estimates)
    if budget_usd is not None and total > budget_usd:
        raise BudgetExceeded(
            f"{'; '.join(e.describe() for e in estimates)}: ${total:.4f} in all, which exceeds the budget "
            f"cap ${budget_usd:.4f}; nothing was sent. Raise llm.budget_usd in data/generation.yaml or "
            f"judge fewer pairs (judge.top_n in data/answer_evaluation.yaml)"
        )
