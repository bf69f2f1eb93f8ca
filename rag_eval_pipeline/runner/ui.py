"""`rag-eval ui`: the Dagster UI (`dagster dev`) on one workspace: its own instance (the workspace's
dagster.yaml, storage under its .dagster/), its data and settings, whichever folder it was started from.

`dagster dev` reads dagster.yaml from its working directory (unless $DAGSTER_HOME names another), so it
starts in the workspace folder; the code location is this package's definitions, named as in
pyproject.toml's [tool.dg] (a Dagster workspace file under .dagster/ says so, as ``-m`` cannot: the same
as the checkout's workspace.yaml, which is not installed with the package), and
$RAG_EVAL_PROJECT_DIR tells them which workspace to read, so the sensors watch its documents."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.project.workspace import PROJECT_DIR_ENV
from ..core.store.files import make_folder, write_text_atomically

CODE_LOCATION_MODULE = "rag_eval_pipeline.definitions"
CODE_LOCATION_NAME = "rag_eval_pipeline"


def code_locations_yaml() -> str:
    """The Dagster workspace file of the one code location; the checkout's workspace.yaml says the same
    (rag_eval_pipeline_tests/runner/test_ui.py holds them, and pyproject.toml, to it)."""
    return (
        "load_from:\n"
        f"  - python_module:\n      module_name: {CODE_LOCATION_MODULE}\n"
        f"      location_name: {CODE_LOCATION_NAME}\n"
    )


@dataclass(frozen=True)
class UICommand:
    args: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    code_locations: Path  # the Dagster workspace file naming the one code location

    @property
    def url(self) -> str:
        host, port = self.args[self.args.index("-h") + 1], self.args[self.args.index("-p") + 1]
        return f"http://{host}:{port}"


def ui_command(
    root: Path, port: int = 3000, host: str = "127.0.0.1", environ: Mapping[str, str] = os.environ
) -> UICommand:
    dagster = Path(sys.executable).with_name("dagster")
    program = [str(dagster)] if dagster.exists() else [sys.executable, "-m", "dagster"]
    code_locations = root / ".dagster" / "ui_code_locations.yaml"
    args = (*program, "dev", "-w", str(code_locations), "-h", host, "-p", str(port))
    return UICommand(args, root, {**environ, PROJECT_DIR_ENV: str(root)}, code_locations)


def default_signal_handlers() -> None:
    """In the child before it executes `dagster dev`: SIGINT and SIGTERM as a fresh process has them.
    Started where SIGINT is ignored (`nohup ... &`, `trap '' INT`), `dagster dev` would inherit that,
    point SIGTERM at it (as Dagster does for Kubernetes) and stop on neither (GUIDE section 8)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_ui(command: UICommand) -> int:
    """Runs until the user stops it (Ctrl-C stops `dagster dev` and its daemon with it)."""
    make_folder(command.code_locations.parent)
    write_text_atomically(command.code_locations, code_locations_yaml())
    process = subprocess.Popen(
        command.args, cwd=command.cwd, env=dict(command.env), preexec_fn=default_signal_handlers
    )
    # a SIGTERM to `rag-eval ui` (a service manager, `kill`) stops `dagster dev` too, not only Ctrl-C
    previous = signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    try:
        return process.wait()
    except KeyboardInterrupt:
        return process.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
