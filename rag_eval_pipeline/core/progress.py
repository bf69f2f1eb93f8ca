"""Progress for long steps, reported the same way whether a terminal or a Dagster run log listens."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

# Whether steps draw a terminal bar too: `rag-eval` asks for bars when it executes the steps in its own
# process on a terminal; the environment carries the request into every run it executes.
PROGRESS_BAR_ENV = "RAG_EVAL_PROGRESS_BAR"


class Progress(Protocol):
    def __call__(self, stage: str, done: int, total: int) -> None:
        """Called with the running count of finished items of ``stage`` (``done == total`` at the end)."""
        ...


def no_progress(stage: str, done: int, total: int) -> None:
    """The default: say nothing."""


# A step's lines in the run log, each an event Dagster stores: none when a stage starts, the first
# after STEP_LOG_INTERVAL seconds, each next one after twice the wait before (10, 30, 70, 150 s ...),
# and the last unless the stage took under STEP_LOG_QUIET seconds (its step's own summary line says what
# it did); a stage of a few seconds writes one line (issues 16 and 34: events cost a run's time).
STEP_LOG_INTERVAL = 10.0
STEP_LOG_GROWTH = 2.0
STEP_LOG_QUIET = 2.0


class LogProgress:
    """Writes lines with counts, rate and ETA, at most one every ``interval`` seconds per stage (the
    interval multiplied by ``growth`` after each line in between); ``quiet_start``: no line when a
    stage starts, only after the interval or at its end; ``quiet_below``: no line at all for a stage
    that ended within that many seconds."""

    def __init__(
        self,
        log: Callable[[str], None],
        interval: float = 5.0,
        *,
        quiet_start: bool = False,
        growth: float = 1.0,
        quiet_below: float = 0.0,
    ) -> None:
        self._log = log
        self._interval = interval
        self._quiet_start = quiet_start
        self._growth = growth
        self._quiet_below = quiet_below
        self._started: dict[str, tuple[float, int]] = {}
        self._last: dict[str, float] = {}
        self._waits: dict[str, float] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        starting = stage not in self._started or done < self._started[stage][1]
        if starting:
            self._started[stage] = (now, done)
            self._last[stage] = now
            self._waits[stage] = self._interval
        started, first = self._started[stage]
        finished = done >= total
        announce = starting and not self._quiet_start
        if not (announce or finished) and now - self._last[stage] < self._waits[stage]:
            return
        if not (starting or finished):
            self._waits[stage] *= self._growth
        elapsed = now - started
        if finished and elapsed < self._quiet_below and self._last[stage] == started:
            del self._started[stage]  # short, and nothing said about it before: its step's summary says it
            return
        self._last[stage] = now
        rate = (done - first) / elapsed if elapsed > 0 else 0.0
        eta = f", eta {(total - done) / rate:.0f} s" if rate > 0 and not finished else ""
        percent = 100.0 * done / total if total else 100.0
        self._log(f"{stage}: {done}/{total} ({percent:.0f}%) at {rate:.1f}/s{eta}")
        if finished:
            del self._started[stage]


class TqdmProgress:
    """A terminal progress bar per stage."""

    def __init__(self) -> None:
        from tqdm import tqdm

        self._tqdm = tqdm
        self._bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        bar = self._bars.get(stage)
        if bar is None:
            bar = self._bars[stage] = self._tqdm(total=total, desc=stage, unit="item", leave=False)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            del self._bars[stage]


def fan_out(*listeners: Progress) -> Progress:
    def report(stage: str, done: int, total: int) -> None:
        for listener in listeners:
            listener(stage, done, total)

    return report


def show_progress_bars() -> None:
    """Every step this process executes from now on draws a terminal bar besides its log lines."""
    os.environ[PROGRESS_BAR_ENV] = "1"


def say_on_terminal(message: str) -> None:
    """``message`` on the terminal now, above any progress bar, when this process draws bars (a step
    `rag-eval run` executes in its own process on a terminal); elsewhere nothing: the run log has it."""
    if os.environ.get(PROGRESS_BAR_ENV) == "1":
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)


def step_progress(log: Callable[[str], None]) -> Progress:
    """A step's progress: lines with counts and rates through ``log``, and a terminal bar when this
    process asked for bars (``show_progress_bars``)."""
    lines = LogProgress(
        log, STEP_LOG_INTERVAL, quiet_start=True, growth=STEP_LOG_GROWTH, quiet_below=STEP_LOG_QUIET
    )
    if os.environ.get(PROGRESS_BAR_ENV) == "1":
        return fan_out(lines, TqdmProgress())
    return lines
