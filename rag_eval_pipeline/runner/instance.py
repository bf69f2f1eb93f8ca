"""The project's Dagster instance, which `rag-eval` runs on and reads from, as `dagster dev` does."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

import dagster as dg

from ..core.errors import StorageError
from ..core.files import locked, make_folder, write_text_atomically


@contextmanager
def project_instance(root: Path) -> Iterator[dg.DagsterInstance]:
    """$DAGSTER_HOME when set, else the project's own dagster.yaml (storage under .dagster/). Its storage
    paths are relative to the working directory, as for `dagster dev`: call it from the project root
    (`main` changes there)."""
    if os.environ.get("DAGSTER_HOME"):
        with dg.DagsterInstance.get() as instance:
            yield instance
        return
    home = root / ".dagster"
    make_folder(home)  # a read-only project fails here with the folder and the OS error
    # the project's dagster.yaml puts every store under .dagster/; without one (a folder not made by
    # `rag-eval init`), Dagster's defaults go there, telemetry off as in every dagster.yaml of ours
    config_dir = root if (root / "dagster.yaml").is_file() else home
    if config_dir == home and not (home / "dagster.yaml").exists():
        write_text_atomically(home / "dagster.yaml", "telemetry:\n  enabled: false\n")
    # the first opening creates the storage's databases and stamps their schema: two processes doing it
    # at once (three `rag-eval profiles create` on a new workspace) break it, so openings take turns
    with ExitStack() as turn:
        # a read-only .dagster/ takes no lock file: no storage can be created there, nothing to wait for
        with suppress(StorageError):
            turn.enter_context(locked(home / "instance"))
        instance = dg.DagsterInstance.from_config(str(config_dir))
    with instance:
        yield instance
