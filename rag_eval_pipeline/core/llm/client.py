"""One LLM client for every caller: cache, rate limit, retries with backoff, repair of bad JSON, usage."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from ..progress import Progress, no_progress
from ..redaction import redact, redact_exception
from .accounting import CostEstimate, PriceTable, Usage, UsageSnapshot, estimate_prompt_tokens
from .base import ChatMessage, ChatModel, Completion, CompletionParams, LLMError, TransientLLMError
from .cache import ResponseCache, request_key
from .json_reply import parse_json_object, repair_messages
from .rate_limit import RateLimiter
from .retry import RetryPolicy

T = TypeVar("T")
X = TypeVar("X")
Y = TypeVar("Y")


class RetriesExhausted(LLMError):
    pass


class UnexpectedLLMError(LLMError):
    """The chat model raised something other than an ``LLMError`` (a backend bug, a fault nobody
    classified): recorded with its type and message like any failed call, not retried, since nothing
    says a retry would help."""


@dataclass(frozen=True)
class JsonOutcome(Generic[T]):
    """A parsed, validated reply (``value``), or why there is none (``error``) and the last raw reply."""

    value: T | None
    error: str | None
    raw: str | None
    attempts: int
    failure: Literal["llm_failed", "invalid_reply"] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class LLMClient:
    def __init__(
        self,
        model: ChatModel,
        *,
        cache: ResponseCache | None = None,
        limiter: RateLimiter | None = None,
        retry: RetryPolicy | None = None,
        prices: PriceTable | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int = 0,
    ) -> None:
        self.model = model
        self.cache = cache
        self.limiter = limiter or RateLimiter()
        self.retry = retry or RetryPolicy()
        self.prices = prices or PriceTable()
        self.usage = Usage(self.prices.price(model.model_name))
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.model.model_id

    def usage_snapshot(self) -> UsageSnapshot:
        return self.usage.snapshot(self.limiter.waited_s)

    def is_cached(self, messages: Sequence[ChatMessage], params: CompletionParams) -> bool:
        return self.cache is not None and request_key(self.model_id, messages, params) in self.cache

    def complete(self, messages: Sequence[ChatMessage], params: CompletionParams) -> Completion:
        """A reply from the cache, or from the model with retries; ``LLMError`` when neither works.

        Whatever the model raises ends here as a counted ``LLMError`` with no secret in its message:
        transient faults after the retries (``RetriesExhausted``), permanent ones at once, and anything
        else as ``UnexpectedLLMError`` naming its type, so every caller keeps a failed row for it."""
        key = request_key(self.model_id, messages, params)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                self.usage.add(cache_hits=1)
                return cached
        failures = 0
        while True:
            try:
                with self.limiter.slot():
                    self.usage.add(calls=1)
                    completion = self.model.complete(messages, params)
            except TransientLLMError as exc:
                failures += 1
                if failures >= self.retry.max_attempts:
                    self.usage.add(failures=1)
                    raise RetriesExhausted(redact(f"gave up after {failures} attempts: {exc}")) from None
                self.usage.add(retries=1)
                with self._rng_lock:
                    wait = self.retry.delay(failures, exc.retry_after, self._rng)
                self._sleep(wait)
                continue
            except LLMError as exc:
                self.usage.add(failures=1)
                raise _redacted(exc) from None
            except Exception as exc:  # never an escape: the caller keeps the row, failed, with the reason
                self.usage.add(failures=1)
                raise UnexpectedLLMError(
                    redact(f"{self.model_id} raised {type(exc).__name__}: {exc}")
                ) from redact_exception(exc)
            self.usage.add(
                prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens
            )
            if self.cache is not None:
                self.cache.put(key, self.model_id, completion)
            return completion

    def complete_json(
        self,
        messages: Sequence[ChatMessage],
        params: CompletionParams,
        validate: Callable[[dict[str, Any]], T],
        schema_hint: str,
        repair_attempts: int = 1,
    ) -> JsonOutcome[T]:
        """A JSON object from the reply, checked by ``validate`` (see ``complete_parsed``)."""
        return self.complete_parsed(
            messages, params, lambda raw: validate(parse_json_object(raw)), schema_hint, repair_attempts
        )

    def complete_parsed(
        self,
        messages: Sequence[ChatMessage],
        params: CompletionParams,
        parse: Callable[[str], T],
        schema_hint: str,
        repair_attempts: int = 1,
    ) -> JsonOutcome[T]:
        """Parse the reply; on a bad one, ask again with a repair prompt.

        ``parse`` raises ``InvalidReply`` (or ``ValueError``) saying what is wrong. Never raises for a
        bad reply or a failed call: the outcome carries the reason, so the caller keeps a row for it.
        """
        conversation = list(messages)
        raw: str | None = None
        for attempt in range(1, repair_attempts + 2):
            try:
                raw = self.complete(conversation, params).text
            except LLMError as exc:
                return JsonOutcome(None, f"llm call failed: {exc}", raw, attempt, "llm_failed")
            try:
                return JsonOutcome(parse(raw), None, raw, attempt)
            except (ValueError, KeyError, TypeError) as exc:
                problem = str(exc) or type(exc).__name__
                if attempt > repair_attempts:
                    return JsonOutcome(
                        None,
                        f"invalid reply after {attempt} attempts: {problem}",
                        raw,
                        attempt,
                        "invalid_reply",
                    )
                conversation = repair_messages(list(messages), raw, problem, schema_hint)
        raise AssertionError("unreachable")

    def map(
        self,
        fn: Callable[[X], Y],
        items: Sequence[X],
        progress: Progress = no_progress,
        stage: str = "llm calls",
    ) -> list[Y]:
        """``fn`` over ``items`` on ``max_concurrency`` threads; results in input order."""
        total = len(items)
        progress(stage, 0, total)
        if total == 0:
            return []
        done = 0
        lock = threading.Lock()

        def run(item: X) -> Y:
            nonlocal done
            result = fn(item)
            with lock:
                done += 1
                progress(stage, done, total)
            return result

        with ThreadPoolExecutor(max_workers=min(self.limiter.max_concurrency, total)) as pool:
            return list(pool.map(run, items))

    def estimate(self, requests: Sequence[tuple[Sequence[ChatMessage], CompletionParams]]) -> CostEstimate:
        """What sending ``requests`` would cost at most, not counting those already cached."""
        pending = [(m, p) for m, p in requests if not self.is_cached(m, p)]
        prompt = sum(estimate_prompt_tokens(m) for m, _ in pending)
        completion = sum(p.max_tokens for _, p in pending)
        price = self.prices.price(self.model.model_name)
        return CostEstimate(
            model_name=self.model.model_name,
            n_requests=len(requests),
            n_cached=len(requests) - len(pending),
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=price.cost(prompt, completion) if price else None,
        )


def _redacted(exc: LLMError) -> LLMError:
    """The same error (type, retry hint) with any secret the server echoed taken out of its message."""
    message = str(exc)
    clean = redact(message)
    if clean != message:
        exc.args = (clean,)
    return exc
