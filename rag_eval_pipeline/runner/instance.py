"""The project's Dagster instance, which `rag-eval` runs on and reads from, as `dagster dev` does.

Its default storage is SQLite under .dagster/storage: a full or read-only disk, or a damaged database,
surfaces from deep inside Dagster as SQLAlchemy's "disk I/O error" without a file. Whatever a command
does with the instance, such an error ends as a ``StorageError`` naming that storage folder, the OS's
view of the disk and what to do (core/store/sqlite_store.py), which `rag-eval` prints without a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import dagster as dg

from ..core.errors import ConfigError, StorageError
from ..core.settings.settings_file import read_settings_file
from ..core.store.files import locked, make_folder, write_text_atomically
from ..core.store.sqlite_store import SqliteFile, sqlite_error_of, storage_failure

# What a user does when the instance's SQLite storage is damaged: Dagster starts an empty history of
# runs where it finds none; the warehouse's tables do not depend on it.
_IF_DAMAGED = (
    "restore that folder from a backup, or move it away: Dagster then starts an empty run history "
    "(the warehouse's tables and the caches stay)"
)


@contextmanager
def project_instance(root: Path) -> Iterator[dg.DagsterInstance]:
    """$DAGSTER_HOME when set, else the project's own dagster.yaml (storage under .dagster/). Its storage
    paths are relative to the working directory, as for `dagster dev`: call it from the project root
    (`main` changes there)."""
    if os.environ.get("DAGSTER_HOME"):
        config_dir = Path(os.environ["DAGSTER_HOME"])
        with _storage_errors(config_dir, root), dg.DagsterInstance.get() as instance:
            yield instance
        return
    home = root / ".dagster"
    make_folder(home)  # a read-only project fails here with the folder and the OS error
    # the project's dagster.yaml puts every store under .dagster/; without one (a folder not made by
    # `rag-eval init`), Dagster's defaults go there, telemetry off as in every dagster.yaml of ours
    config_dir = root if (root / "dagster.yaml").is_file() else home
    if config_dir == home and not (home / "dagster.yaml").exists():
        write_text_atomically(home / "dagster.yaml", "telemetry:\n  enabled: false\n")
    with _storage_errors(config_dir, root):
        # the first opening creates the storage's databases and stamps their schema: two processes doing
        # it at once (three `rag-eval profiles create` on a new workspace) break it, so openings take turns
        with ExitStack() as turn:
            # a read-only .dagster/ takes no lock file: no storage can be created there, nothing to wait for
            with suppress(StorageError):
                turn.enter_context(locked(home / "instance"))
            instance = dg.DagsterInstance.from_config(str(config_dir))
        with instance:
            yield instance


@contextmanager
def _storage_errors(config_dir: Path, root: Path) -> Iterator[None]:
    """A SQLite failure of the instance's storage (opening it, or any read or write while in use) as a
    ``StorageError`` naming its folder; other errors unchanged."""
    try:
        yield
    except Exception as exc:
        error = sqlite_error_of(exc)
        if error is None:
            raise
        store = SqliteFile(_sqlite_storage(config_dir, root), "Dagster storage", _IF_DAMAGED)
        failure = storage_failure(store, error)
        if failure is None:
            raise
        raise failure from exc


def _sqlite_storage(config_dir: Path, root: Path) -> Path:
    """The folder of the instance's SQLite storage: ``storage: sqlite: base_dir`` of its dagster.yaml, or
    the folder holding the ``base_dir`` of its run, event log and schedule storages (relative to the
    project root, where `rag-eval` runs), else Dagster's default under the home."""
    try:
        config = read_settings_file(config_dir / "dagster.yaml") or {}
    except (ConfigError, OSError):  # Dagster read it already; its own words stand for a broken file
        config = {}
    storage: Any = config.get("storage")
    sqlite = storage.get("sqlite") if isinstance(storage, dict) else None
    base_dir = sqlite.get("base_dir") if isinstance(sqlite, dict) else None
    if isinstance(base_dir, str) and base_dir:
        return root / base_dir
    folders = [
        str(root / part["config"]["base_dir"])
        for key in ("run_storage", "event_log_storage", "schedule_storage")
        if isinstance(part := config.get(key), dict)
        and isinstance(part.get("config"), dict)
        and isinstance(part["config"].get("base_dir"), str)
        and part["config"]["base_dir"]
    ]
    if folders:
        return Path(os.path.commonpath(folders))
    return config_dir / "storage"
