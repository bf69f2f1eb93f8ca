"""`rag-eval ui` starts `dagster dev` in the workspace (its dagster.yaml), naming the code location as
pyproject.toml does, with the workspace in the environment for the definitions to read."""

import os
import signal
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline.core.project.workspace import PROJECT_DIR_ENV
from rag_eval_pipeline.runner.ui import (
    CODE_LOCATION_MODULE,
    CODE_LOCATION_NAME,
    code_locations_yaml,
    ui_command,
)
from rag_eval_pipeline_tests.conftest import REPO
from rag_eval_pipeline_tests.dagster_dev import free_port, wait_until_served
from rag_eval_pipeline_tests.faults.entry_points import rag_eval_command, rag_eval_env


def test_the_ui_runs_in_the_workspace_with_the_code_location_of_pyproject(tmp_path: Path) -> None:
    command = ui_command(tmp_path, port=3210, environ={"PATH": "/bin", PROJECT_DIR_ENV: "/elsewhere"})
    assert command.cwd == tmp_path and command.url == "http://127.0.0.1:3210"
    assert command.env == {"PATH": "/bin", PROJECT_DIR_ENV: str(tmp_path)}
    assert command.args[command.args.index("-w") + 1] == str(command.code_locations)
    assert command.code_locations.is_relative_to(tmp_path / ".dagster")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["dg"]["project"]
    assert (
        project["code_location_target_module"],
        project["code_location_name"],
    ) == (CODE_LOCATION_MODULE, CODE_LOCATION_NAME)


def test_the_checkout_s_workspace_file_names_the_code_location_the_ui_and_pyproject_name() -> None:
    """workspace.yaml at the repository root (`dagster dev -w workspace.yaml`, the design's top level) is
    the file `rag-eval ui` writes into each workspace."""
    checkout = yaml.safe_load((REPO / "workspace.yaml").read_text(encoding="utf-8"))
    assert checkout == yaml.safe_load(code_locations_yaml())
    (location,) = checkout["load_from"]
    assert location == {
        "python_module": {"module_name": CODE_LOCATION_MODULE, "location_name": CODE_LOCATION_NAME}
    }


@pytest.mark.slow
def test_dagster_loads_the_definitions_from_the_checkout_s_workspace_file(tmp_path: Path) -> None:
    """`dagster definitions validate -w workspace.yaml`: the code location loads as `dagster dev` would
    load it (in its own process, on an empty instance)."""
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env |= {"DAGSTER_HOME": str(tmp_path), PROJECT_DIR_ENV: str(REPO)}
    dagster = Path(sys.executable).with_name("dagster")
    validated = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", str(REPO / "workspace.yaml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert validated.returncode == 0, validated.stderr
    said = validated.stdout + validated.stderr
    assert f"Validation successful for code location {CODE_LOCATION_NAME}" in said, said


@pytest.mark.slow
def test_the_ui_started_with_sigint_ignored_stops_with_its_dagster_dev_on_sigterm(
    tiny_project: Path, tmp_path: Path
) -> None:
    """A shell's background job (`nohup rag-eval ui &`, `trap '' INT`) starts with SIGINT ignored;
    `dagster dev` inherited that and pointed SIGTERM at it, so `rag-eval ui` waited forever for it."""
    port = free_port()
    command = " ".join(rag_eval_command("ui", "--port", str(port)))
    log = tmp_path / "ui.log"
    with log.open("w") as out:
        ui = subprocess.Popen(
            ["bash", "-c", f"trap '' INT; exec {command}"],
            env=rag_eval_env(tiny_project),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: whatever is left is killed at the end
        )
        try:
            wait_until_served(f"http://127.0.0.1:{port}", ui, timeout_s=300)
            ui.send_signal(signal.SIGTERM)  # by PID: bash exec'd rag-eval ui
            ui.wait(timeout=120)
        finally:
            if ui.poll() is None:
                os.killpg(ui.pid, signal.SIGKILL)
                ui.wait()
                pytest.fail(f"rag-eval ui did not stop on SIGTERM:\n{log.read_text()}")
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5)
    deadline = time.monotonic() + 60  # the webserver and daemon `dagster dev` started end with it
    while _group_alive(ui.pid):
        if time.monotonic() > deadline:
            os.killpg(ui.pid, signal.SIGKILL)
            pytest.fail("processes of `dagster dev` outlived it")
        time.sleep(0.5)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
