"""Exponential backoff with jitter, honouring the server's Retry-After."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    # The delay of attempt n is drawn from [backoff * (1 - jitter), backoff]: parallel callers that
    # failed together do not come back together.
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must lie in [0, 1]")

    def delay(self, failed_attempts: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after ``failed_attempts`` failures (1 for the first)."""
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (failed_attempts - 1))
        wait = backoff * (1 - self.jitter * rng.random())
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay_s))
        return wait
