"""The search sensor: it watches data/search.yaml and launches search_job when the space changes."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from rag_eval_pipeline.defs.search.search_job import search_sensor
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.instances import instance_for_tests

SPACE = "retrieval: {top_k: [3, 5]}\n"


def test_the_sensor_searches_again_when_the_space_changes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    resources = tiny_resources(project, tmp_path)
    with instance_for_tests() as instance:
        first = search_sensor(dg.build_sensor_context(instance=instance, resources=resources))
        assert not first.run_requests and "launch search_job" in str(first.skip_reason)
        same = search_sensor(
            dg.build_sensor_context(instance=instance, cursor=first.cursor, resources=resources)
        )
        assert not same.run_requests
        (project / "data/search.yaml").write_text(SPACE, encoding="utf-8")
        changed = search_sensor(
            dg.build_sensor_context(instance=instance, cursor=first.cursor, resources=resources)
        )
        assert len(changed.run_requests) == 1 and changed.cursor != first.cursor
