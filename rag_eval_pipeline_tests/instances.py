"""The tests' Dagster instance: ``dg.instance_for_test`` with the event log storage users get.

The project's dagster.yaml (and the one `rag-eval init` writes) names
``lib/event_log_storage.EngineKeepingSqliteEventLogStorage`` (read from that file here); Dagster's test
instance would use Dagster's own ``SqliteEventLogStorage``, which makes an engine per connection and
each run's database through alembic. Measured on the tiny project, one evaluation of every partition in
one process: 17.1 CPU s on Dagster's class, 13.0 on the project's (medians of 4, interleaved). So the
tests run on what users run, and cheaper; ``test_layout`` keeps ``dg.instance_for_test`` out of the
other test modules."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from rag_eval_pipeline_tests.conftest import REPO

STORAGES = ("run_storage", "event_log_storage", "schedule_storage")


@cache
def _named_event_log() -> tuple[str, str, str]:
    """The module, class and folder of the project's dagster.yaml ``event_log_storage``, the folder
    relative to its three storages' common folder (where ``storage: sqlite: base_dir: HOME`` puts
    Dagster's). Read once a process: the tests open hundreds of instances."""
    config = yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))
    folders = {name: config[name]["config"]["base_dir"] for name in STORAGES}
    named = config["event_log_storage"]
    relative = os.path.relpath(folders["event_log_storage"], os.path.commonpath(list(folders.values())))
    return named["module"], named["class"], relative


def event_log_storage(home: Path) -> dict[str, Any]:
    """dagster.yaml's ``event_log_storage`` as the project's names it, for an instance in ``home``."""
    module, name, relative = _named_event_log()
    return {"module": module, "class": name, "config": {"base_dir": str(home / relative)}}


@contextmanager
def instance_for_tests(
    overrides: Mapping[str, Any] | None = None, temp_dir: str | None = None
) -> Iterator[dg.DagsterInstance]:
    """``dg.instance_for_test(overrides, temp_dir=temp_dir)`` on the project's event log storage (run and
    schedule storages: Dagster's defaults, in the layout the project's dagster.yaml names)."""
    with ExitStack() as stack:
        home = temp_dir or stack.enter_context(tempfile.TemporaryDirectory(ignore_cleanup_errors=True))
        storage = {"event_log_storage": event_log_storage(Path(home))}
        yield stack.enter_context(
            dg.instance_for_test(overrides={**storage, **(overrides or {})}, temp_dir=home)
        )
