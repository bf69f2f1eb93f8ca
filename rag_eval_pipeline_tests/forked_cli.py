"""`rag-eval` processes for the tests, forked from a process that has imported the package already.

A `rag-eval` process spends 2-4 CPU s importing Dagster, pandas and the definitions before it does
anything; the suite starts about 170 of them. Here each test process (an xdist worker) starts one zygote
(``python -m rag_eval_pipeline_tests.forked_cli SOCKET``) that imports what `rag-eval` imports and
waits; a test's `rag-eval ARGS` is a fork of it that sets the request's environment, working directory,
stdin/stdout/stderr and ``sys.argv`` and runs ``python -m rag_eval_pipeline`` as the interpreter would
(`runpy`, exit through ``SystemExit``: atexit handlers, thread joins and flushes as in any process). It
is still a process of its own, with its own pid, exit status and files.

What a fork cannot give is an import under another environment, so a request whose interpreter
variables differ from the zygote's (``PYTHON*``, ``LD_*``: e.g. a test's ``sitecustomize.py`` on
PYTHONPATH) runs as a real subprocess; so does every request when ``RAG_EVAL_TESTS_NO_FORK`` is set (to
compare). Importing the package reads no environment variable and no file (test_import_reads_no_file.py),
so everything else is read by the command itself, after the fork.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

# What `rag-eval run` and the other commands import on their way (python -X importtime).
PRELOADED = (
    "rag_eval_pipeline.cli",
    "rag_eval_pipeline.cli.registry",
    "rag_eval_pipeline.cli.output",
    "rag_eval_pipeline.cli.runs",
    "rag_eval_pipeline.runner.evaluate",
    "rag_eval_pipeline.runner.launch",
    "rag_eval_pipeline.runner.resume",
    "rag_eval_pipeline.definitions",
    "dagster._core.storage.base_storage",
    "dagster._core.storage.runs",
    "dagster._core.storage.event_log",
    "rag_eval_pipeline.lib.event_log_storage",
    "rag_eval_pipeline.lib.run_storage",
    "rag_eval_pipeline.lib.compute_logs",
)

# The variables the interpreter or the dynamic loader read at start: a request that changes one of them
# runs as a real subprocess.
_AT_START = ("PYTHON", "LD_", "MALLOC_")
NO_FORK = "RAG_EVAL_TESTS_NO_FORK"


def command(*args: str) -> list[str]:
    """The command line of `rag-eval ARGS` (as ``subprocess.run`` would be given it)."""
    return [sys.executable, "-m", "rag_eval_pipeline", *args]


def run(
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | str | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """`rag-eval ARGS` with ``env`` (the whole environment) in ``cwd``, its output captured as text:
    ``subprocess.run(command(*args), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)``,
    forked from the zygote when that is the same thing."""
    zygote = _zygote() if NO_FORK not in env and NO_FORK not in os.environ else None
    if zygote is None or zygote.process.poll() is not None or not zygote.forks_alike(env):
        return subprocess.run(
            command(*args), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
    return zygote.run(list(args), dict(env), str(Path(cwd or os.getcwd()).resolve()), timeout)


class _Zygote:
    """The client's side: one zygote process, asked over a Unix socket (one message per request)."""

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="rag_eval_zygote_")
        self.socket_path = os.path.join(self._folder, "socket")
        self.env = dict(os.environ)  # the interpreter's variables in it are what a request must match
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rag_eval_pipeline_tests.forked_cli", self.socket_path],
            env=self.env,
            cwd=Path(__file__).resolve().parents[1],  # `-m` finds the tests' package from any test's cwd
            stdin=subprocess.PIPE,  # closed when this process ends: the zygote then ends too
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            self.process.kill()
            raise RuntimeError(f"the rag-eval zygote did not start: {ready!r}")
        self.forked = 0  # requests served by a fork

    def forks_alike(self, env: Mapping[str, str]) -> bool:
        names = set(env) | set(self.env)
        return not any(name.startswith(_AT_START) and env.get(name) != self.env.get(name) for name in names)

    def run(
        self, args: list[str], env: dict[str, str], cwd: str, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        request = json.dumps({"args": args, "env": env, "cwd": cwd}).encode()
        with (
            open(os.devnull, "rb") as stdin,
            tempfile.TemporaryFile() as stdout,
            tempfile.TemporaryFile() as stderr,
            socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as channel,
        ):
            channel.connect(self.socket_path)
            self.forked += 1
            socket.send_fds(channel, [request], [stdin.fileno(), stdout.fileno(), stderr.fileno()])
            pid = int(channel.recv(64))
            channel.settimeout(timeout)
            try:
                status = channel.recv(64)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                channel.settimeout(None)
                channel.recv(64)
                raise subprocess.TimeoutExpired(command(*args), timeout, *_read(stdout, stderr)) from None
            assert status, "the rag-eval zygote ended during a request"
            out, err = _read(stdout, stderr)
        return subprocess.CompletedProcess(command(*args), int(status), out, err)

    def close(self) -> None:
        """Ends the zygote (its stdin closes: it returns) and removes its socket."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        for name in os.listdir(self._folder):
            os.unlink(os.path.join(self._folder, name))
        os.rmdir(self._folder)


def _read(stdout: IO[bytes], stderr: IO[bytes]) -> tuple[str, str]:
    stdout.seek(0)
    stderr.seek(0)
    return stdout.read().decode(errors="replace"), stderr.read().decode(errors="replace")


def _can_fork() -> bool:
    """fork, fd passing and pidfds (Linux 5.3+): what the zygote needs; otherwise real subprocesses."""
    if not (hasattr(os, "fork") and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


_started: list[_Zygote | None] = []
_start_lock = threading.Lock()


def _zygote() -> _Zygote | None:
    """This process's zygote, started on first use; None where it cannot work (``_can_fork``)."""
    with _start_lock:
        if not _started:
            _started.append(_Zygote() if _can_fork() else None)
            zygote = _started[0]
            if zygote is not None:
                atexit.register(zygote.close)
        return _started[0]


# ---- the zygote's side --------------------------------------------------------------------------------


def serve(socket_path: str) -> None:
    """Imports PRELOADED, then forks a `rag-eval` for each request until stdin closes. Single-threaded
    (a fork copies only the thread that forks): children are watched through pidfds."""
    import importlib

    for module in PRELOADED:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(socket_path)
    listener.listen(16)
    print("ready", flush=True)
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd: (pid, the request's channel)
    while True:
        ready, _, _ = select.select([sys.stdin, listener, *children], [], [])
        for source in ready:
            if source is sys.stdin:
                if not sys.stdin.readline():  # the test process is gone
                    return
            elif source is listener:
                channel, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(channel, 1 << 20, 3)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for pidfd, (_, other) in children.items():  # the other requests' ends
                        os.close(pidfd)
                        other.close()
                    _become_rag_eval(json.loads(message), fds, channel)  # exits
                for fd in fds:
                    os.close(fd)
                children[os.pidfd_open(pid)] = (pid, channel)
                channel.send(str(pid).encode())
            else:
                pid, channel = children.pop(source)  # type: ignore[call-overload]
                _, status = os.waitpid(pid, 0)
                os.close(source)  # type: ignore[arg-type]
                channel.send(str(os.waitstatus_to_exitcode(status)).encode())
                channel.close()


def _become_rag_eval(request: dict[str, object], fds: list[int], channel: socket.socket) -> None:
    """In the forked child: the process `python -m rag_eval_pipeline ARGS` would be, then its exit."""
    channel.close()
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    cwd, env, args = request["cwd"], request["env"], request["args"]
    assert isinstance(cwd, str) and isinstance(env, dict) and isinstance(args, list)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.path[0] = cwd  # `python -m` puts the working directory first
    sys.argv = ["-m", *args]  # runpy sets argv[0] to the module's file
    runpy.run_module("rag_eval_pipeline", run_name="__main__", alter_sys=True)
    raise SystemExit(0)


if __name__ == "__main__":
    serve(sys.argv[1])
