"""The run queue of the project's and a new workspace's instance: the daemon of `dagster dev` looks at it
every second (Dagster's default is 5 s, a wait before every run launched from the UI, a backfill, a
sensor or the schedule: benchmarks/ui_backfill.py), and still starts at most 2 runs at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "rag_eval_pipeline" / "core" / "project" / "workspace_templates" / "dagster.yaml"


@pytest.mark.parametrize("source", [REPO / "dagster.yaml", TEMPLATE], ids=["project", "workspace template"])
def test_the_daemon_dequeues_runs_every_second(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(source, tmp_path / "dagster.yaml")
    monkeypatch.chdir(tmp_path)  # its storage paths are relative to the working directory
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        coordinator = instance.run_coordinator
        assert isinstance(coordinator, dg.QueuedRunCoordinator)
        assert coordinator.dequeue_interval_seconds == 1
        queue = instance.get_concurrency_config().run_queue_config
        assert queue is not None and queue.max_concurrent_runs == 2
