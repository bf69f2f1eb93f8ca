"""Requests per minute and calls in flight, shared by every thread of a client."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class RateLimiter:
    """Spaces request starts ``60 / requests_per_minute`` seconds apart and caps concurrent calls.

    Even spacing instead of a burst bucket: a provider's per-minute window then never sees a burst.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        max_concurrency: int = 4,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive (or None for no limit)")
        self.requests_per_minute = requests_per_minute
        self.max_concurrency = max_concurrency
        self._interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._clock = clock
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._lock = threading.Lock()
        self._next_start = 0.0
        self.waited_s = 0.0

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._slots:
            if self._interval:
                with self._lock:
                    now = self._clock()
                    start = max(now, self._next_start)
                    self._next_start = start + self._interval
                    wait = start - now
                    self.waited_s += wait
                if wait > 0:
                    self._sleep(wait)
            yield
