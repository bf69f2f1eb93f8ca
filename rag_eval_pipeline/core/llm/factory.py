"""Which chat model a project gets: an OpenAI-protocol endpoint when a key is set, else the local model."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .accounting import PriceTable
from .base import ChatModel
from .cache import ResponseCache
from .client import LLMClient
from .local_smollm import INSTALL_HINT, SmolLM2ChatModel, smollm2_available
from .openai_chat import OpenAIChatModel
from .rate_limit import RateLimiter
from .retry import RetryPolicy


def make_chat_model(
    provider: str,
    model: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout_s: float = 60.0,
) -> ChatModel | None:
    """``auto``: OpenAI (or the server at ``base_url``) with a key, else SmolLM2 if installed, else None."""
    if provider == "auto":
        if api_key:
            return OpenAIChatModel(model, api_key=api_key, base_url=base_url, timeout=timeout_s)
        return SmolLM2ChatModel() if smollm2_available() else None
    if provider == "openai":
        if not api_key:
            raise ConfigError(
                "llm.provider 'openai' needs OPENAI_API_KEY in the environment (any non-empty value for a "
                "local server that ignores it, with OPENAI_BASE_URL pointing at the server)"
            )
        return OpenAIChatModel(model, api_key=api_key, base_url=base_url, timeout=timeout_s)
    if provider == "local":
        if not smollm2_available():
            raise ConfigError(f"llm.provider 'local' needs the SmolLM2 model installed: {INSTALL_HINT}")
        return SmolLM2ChatModel()
    raise ConfigError(f"unknown llm.provider {provider!r}: use auto, openai or local")


def make_client(
    model: ChatModel,
    *,
    cache_path: str | Path | None,
    prices: PriceTable,
    requests_per_minute: float | None,
    max_concurrency: int,
    max_attempts: int,
    seed: int = 0,
) -> LLMClient:
    return LLMClient(
        model,
        cache=ResponseCache(cache_path) if cache_path else None,
        limiter=RateLimiter(requests_per_minute or None, max_concurrency),
        retry=RetryPolicy(max_attempts=max_attempts),
        prices=prices,
        seed=seed,
    )
