"""Who is asking for the runs and cancellations this thread makes: the person at the terminal (`rag-eval`,
``user@host``), or an HTTP API token (`rag-eval serve`, the token's name). The run record's trigger tags
(lib/run_record.py) and a cancel request's "by" read it, so an evaluation started over HTTP says which
token started it, and never the token itself."""

from __future__ import annotations

import getpass
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .run_tags import API_TRIGGER, CLI_TRIGGER


@dataclass(frozen=True)
class Caller:
    trigger: str  # CLI_TRIGGER or API_TRIGGER: the value of the run's trigger tag
    who: str  # user@host, or the API token's name


_CALLER: ContextVar[Caller | None] = ContextVar("rag_eval_caller", default=None)


def current_caller() -> Caller:
    """The caller set by ``acting_as`` in this context, else the user at this terminal."""
    caller = _CALLER.get()
    if caller is not None:
        return caller
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (a bare container)
        user = "unknown"
    return Caller(CLI_TRIGGER, f"{user}@{socket.gethostname()}")


@contextmanager
def acting_as(caller: Caller) -> Iterator[None]:
    """Runs made and cancels asked for inside the block are ``caller``'s (this thread or task only)."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)


def api_caller(token_name: str) -> Caller:
    return Caller(API_TRIGGER, token_name)
