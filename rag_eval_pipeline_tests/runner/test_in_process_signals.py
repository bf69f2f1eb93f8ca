"""After a run executed in process, SIGTERM still terminates the process: Dagster points SIGTERM at the
SIGINT handler during its in-process execution and leaves it so, which in a process started with SIGINT
ignored (a background job, `nohup ... &`, `trap '' INT`) meant SIGTERM was ignored too (GUIDE section 8).
"""

from __future__ import annotations

import ast
import signal
import subprocess
import sys
from pathlib import Path

from rag_eval_pipeline_tests.conftest import REPO

# A process that executes a one-op job through the runner, says so, then waits to be terminated.
SCRIPT = """
import signal, sys, time
import dagster as dg
from rag_eval_pipeline.runner.in_process import execute_in_process

@dg.op
def one() -> int:
    return 1

@dg.job
def tiny() -> None:
    one()

assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # started as a background job is
with dg.instance_for_test() as instance:
    assert execute_in_process(tiny, instance=instance).success
print(repr(signal.getsignal(signal.SIGINT)), repr(signal.getsignal(signal.SIGTERM)), flush=True)
time.sleep(600)
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_process_started_with_sigint_ignored_still_stops_on_sigterm_after_an_in_process_run(
    tmp_path: Path,
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint,
    )
    try:
        assert child.stdout is not None
        handlers = child.stdout.readline()  # SIGINT's and SIGTERM's after the run
        assert handlers.split() == ["<Handlers.SIG_IGN:", "1>", "<Handlers.SIG_DFL:", "0>"], handlers
        child.terminate()
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGTERM


def test_every_in_process_execution_of_the_package_keeps_the_signal_handlers() -> None:
    """No module calls Dagster's ``execute_in_process`` but the runner's wrapper (runner/in_process.py)."""
    callers = []
    for path in sorted((REPO / "rag_eval_pipeline").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("execute_in_process", "materialize"):
                callers.append(str(path.relative_to(REPO)))
    assert callers == ["rag_eval_pipeline/runner/in_process.py"]  # the wrapper's own call
