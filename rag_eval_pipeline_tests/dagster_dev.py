"""A real `dagster dev` for a test: started from Python (default signal handlers, its own session), on a
free port, waited for until its code location has loaded, stopped by PID (GUIDE section 3)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def restore_default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def graphql(url: str, query: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


@contextmanager
def running_dagster_dev(
    cwd: Path,
    env: dict[str, str] | None = None,
    stderr: IO[bytes] | int = subprocess.DEVNULL,
    timeout_s: float = 180.0,
    sensors: bool = True,
) -> Iterator[str]:
    """`dagster dev` with no arguments, as `make ui` starts it in the project root: ``cwd`` gets the
    repository's pyproject.toml, which declares the code location (the tiny projects of the tests
    already have its dagster.yaml). Yields the URL once the webserver answers and the code location
    shows its assets.

    ``sensors=False``: the webserver and the daemon that `dagster dev` runs, started as two processes
    on the same instance, the daemon only once every sensor is stopped. Under `dagster dev` the daemon
    ticks the sensors as soon as it starts, before a test can stop them: the document sensor's first
    tick launched an ingestion run, and on a loaded machine the automation sensor's runs wrote a
    leaderboard over the one the test launched."""
    if cwd.resolve() != REPO:
        shutil.copy(REPO / "pyproject.toml", cwd / "pyproject.toml")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    environ = env if env is not None else {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    if not sensors:  # both processes must find the instance `dagster dev` finds: the dagster.yaml of cwd
        environ = {"DAGSTER_HOME": str(cwd.resolve()), **environ}
    commands = [["dagster", "dev"]] if sensors else [["dagster-webserver"], ["dagster-daemon", "run"]]
    with ExitStack() as processes:

        def start(command: list[str], *args: str) -> subprocess.Popen[bytes]:
            program = Path(sys.executable).with_name(command[0])  # the venv's, as `make ui` runs it
            process = subprocess.Popen(
                [str(program), *command[1:], *args],
                cwd=cwd,
                env=environ,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                preexec_fn=restore_default_signals,
                start_new_session=True,
            )
            processes.callback(stop, process)
            return process

        webserver = start(commands[0], "-h", "127.0.0.1", "-p", str(port))
        wait_until_served(url, webserver, timeout_s)
        if not sensors:
            stop_sensors(url)
            start(commands[1])
        yield url


def wait_until_served(
    url: str, process: subprocess.Popen[Any], timeout_s: float, query: str = "{ assetNodes { id } }"
) -> list[dict[str, Any]]:
    """Waits until the webserver of ``process`` answers at ``url`` and its code location has loaded;
    returns the asset nodes ``query`` asks for."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert process.poll() is None, f"dagster dev exited with {process.returncode}"
        try:
            with urllib.request.urlopen(f"{url}/server_info", timeout=5):
                break
        except (urllib.error.URLError, ConnectionError):
            assert time.monotonic() < deadline, f"dagster dev did not answer within {timeout_s:.0f} s"
            time.sleep(0.5)
    # the code location loads after the webserver answers
    while not (nodes := (graphql(url, query).get("data") or {}).get("assetNodes")):
        assert time.monotonic() < deadline, f"the code location did not load within {timeout_s:.0f} s"
        time.sleep(1)
    return list(nodes)


def stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL to its whole session after a minute."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def stop_sensors(url: str) -> None:
    """Stops every running sensor of the served code location: the automation sensor would materialize
    what a test changes in runs of its own, and the partition sync sensor add partitions; stopped, the
    test sees only the runs it launched (and the 2 run slots stay free)."""
    deadline = time.monotonic() + 180
    while True:
        data = graphql(
            url,
            "{ repositoriesOrError { ... on RepositoryConnection { nodes { sensors { name jobOriginId "
            "sensorState { selectorId status } } } } } }",
        )
        nodes = ((data.get("data") or {}).get("repositoriesOrError") or {}).get("nodes") or []
        if nodes:
            break
        assert time.monotonic() < deadline, "the code location did not load within 180 s"
        time.sleep(1)
    for sensor in nodes[0]["sensors"]:
        if sensor["sensorState"]["status"] == "RUNNING":
            origin, selector = sensor["jobOriginId"], sensor["sensorState"]["selectorId"]
            query = f'mutation {{ stopSensor(jobOriginId: "{origin}", jobSelectorId: "{selector}") {{ __typename }} }}'
            while True:  # the webserver answers 500 while its sqlite storage is busy (a loaded machine)
                try:
                    assert "errors" not in graphql(url, query), sensor["name"]
                    break
                except urllib.error.HTTPError as exc:
                    assert exc.code == 500 and time.monotonic() < deadline, exc
                    time.sleep(2)
