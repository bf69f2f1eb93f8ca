"""How a step fails on bad user input: with the message (file, key, remedy) instead of a traceback, and
marked so `rag-eval` exits with 2, not 1 (runner/run_failures.py reads the mark)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg

from ..core.errors import InputError

# Marks a step failure caused by bad user input: `rag-eval` then exits with 2, not 1 (run_failures.py).
BAD_INPUT_METADATA = "rag_eval/bad_input"


@contextmanager
def input_errors_fail_the_step(prefix: str = "") -> Iterator[None]:
    """Bad user input fails the step with its message (file, key, remedy) instead of a traceback."""
    try:
        yield
    except InputError as exc:
        raise bad_input_failure(f"{prefix}{exc}") from exc


def bad_input_failure(message: str) -> dg.Failure:
    """A step failure that says what the user must fix; `rag-eval` reports it with exit code 2."""
    return dg.Failure(message, metadata={BAD_INPUT_METADATA: True})
