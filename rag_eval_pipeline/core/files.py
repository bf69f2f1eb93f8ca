"""Writing the project's small files so a killed process leaves the old version or the new, never half,
and so two processes that update one file take turns."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def write_text_atomically(path: Path, text: str) -> None:
    """A temporary file next to ``path`` (named for this process), renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` for a read-modify-write of ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
