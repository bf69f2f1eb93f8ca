"""The instance's compute logs (a run's or a step's stdout and stderr) in the files Dagster's
``LocalComputeLogManager`` writes, copied to the terminal by a thread instead of two processes a stream.

Dagster's manager points the stream at its file and starts ``tail -F`` to copy the file back to the
terminal, plus a Python process that kills that tail should this process die: four processes a run,
88 in a cold demo evaluation (1.2 CPU s, a fork of a large process each). Its tail polls once a second
and is killed at the end, so the last lines can miss the terminal (dagster-io/dagster#23336). Here a
thread a stream copies what the file gained, every ``POLL_SECONDS`` and once more after the stream is
put back, so the terminal gets everything. Writers never wait on the copy: the stream goes to the
file, as with Dagster's. The files, their keys and reading them (the UI) are Dagster's own.

A private Dagster module, like lib/event_log_storage.py: the class and its capture helpers live only
there. dagster is pinned; rag_eval_pipeline_tests/lib/test_compute_logs.py fails if they change shape.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._serdes import ConfigurableClassData
from dagster._utils import ensure_file, touch_file

# How often the copy looks at the file: a line reaches the terminal within this (tail -F: 1 s).
POLL_SECONDS = 0.1
# How long the end of a capture waits for the last copy: only a terminal nobody reads takes longer.
FINAL_COPY_SECONDS = 10.0


class ThreadMirroredComputeLogManager(LocalComputeLogManager):
    """``LocalComputeLogManager`` whose capture copies to the terminal in a thread (see the module)."""

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> ThreadMirroredComputeLogManager:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Iterator[CapturedLogContext]:
        out = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        err = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        with mirrored_to_file(sys.stdout, out), mirrored_to_file(sys.stderr, err):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # as Dagster's: the capture is complete


@contextmanager
def mirrored_to_file(stream: IO[str], path: str) -> Iterator[None]:
    """``stream`` (its file descriptor, so output of C code too) written to ``path`` while inside, and
    what it writes there copied to where the stream went before. A stream without a descriptor (a
    test runner's) is left alone, as Dagster's capture leaves it."""
    ensure_file(path)
    descriptor = _descriptor(stream)
    if descriptor is None:
        yield
        return
    stream.flush()
    terminal = os.dup(descriptor)
    done = threading.Event()
    with open(path, "rb") as captured:
        captured.seek(0, os.SEEK_END)  # only what this capture adds (tail -c +0 repeated the file)
        copier = threading.Thread(
            target=_copy_while_capturing,
            args=(captured, terminal, done),
            name=f"compute-log-copy-{descriptor}",
            daemon=True,
        )
        copier.start()
        try:
            with redirect_to_file(stream, path):
                yield
        finally:
            done.set()
            copier.join(FINAL_COPY_SECONDS)
            if not copier.is_alive():  # else it still writes there: its descriptor must not be reused
                os.close(terminal)


def _descriptor(stream: IO[str]) -> int | None:
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None
    return descriptor if descriptor > 0 else None


def _copy_while_capturing(captured: IO[bytes], terminal: int, done: threading.Event) -> None:
    """Copies what ``captured`` gained to ``terminal`` until ``done``, then what is left."""
    while True:
        finished = done.wait(POLL_SECONDS)
        while chunk := captured.read(1 << 16):
            if not _write_all(terminal, chunk):
                return  # the terminal is gone (a closed pipe): the file still has everything
        if finished:
            return


def _write_all(descriptor: int, data: bytes) -> bool:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(descriptor, view) :]
    except OSError:
        return False
    return True
