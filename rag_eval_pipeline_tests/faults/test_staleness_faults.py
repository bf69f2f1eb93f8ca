"""One judgement of freshness: what `rag-eval run` skips as up to date is what the UI shows fresh.

The UI's staleness is asked as the UI asks it: Dagster's GraphQL (``staleStatus``, ``staleCauses``, by
partition for the partitioned assets) over the project's code location on the project's own instance,
through Dagster's own `dagster-graphql` command. Issue 30: after `rag-eval run` found everything up to
date, the UI marked corpus, eval_questions, the leaderboard and everything else that reads an
unpartitioned source "Upstream data" ("documents / project_settings / configured_setups has a new data
version")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.conftest import CliRunFactory
from rag_eval_pipeline_tests.defs.ingestion.test_partition_sync_sensor import tick
from rag_eval_pipeline_tests.faults.entry_points import rag_eval
from rag_eval_pipeline_tests.faults.test_run_faults import evaluation_id_of, run_keys, runs_of

pytestmark = pytest.mark.slow

ASSETS = "assetNodes { assetKey { path } isPartitioned staleStatus staleCauses { key { path } reason } }"
# One asset's partitions, aliased: every partitioned asset in one request
BY_PARTITION = """
  {alias}: assetNodeOrError(assetKey: {{path: {path}}}) {{
    ... on AssetNode {{
      staleStatusByPartition(partitions: {partitions})
      staleCausesByPartition(partitions: {partitions}) {{ key {{ path }} reason }}
    }}
  }}"""
Staleness = dict[tuple[str, str], list[str]]  # (asset, partition or "") -> the UI's causes


def ask_the_ui(project: Path, query: str) -> dict[str, Any]:
    """``query`` as the UI's GraphQL answers it: `dagster-graphql` on the project's code location and
    instance (its dagster.yaml, storage relative to the project root)."""
    answer = project.parent / "graphql.json"
    command = [
        str(Path(sys.executable).with_name("dagster-graphql")),
        *("-m", "rag_eval_pipeline.definitions", "-a", "defs", "-t", query, "-o", str(answer)),
    ]
    env = {**os.environ, "DAGSTER_HOME": str(project), "RAG_EVAL_PROJECT_DIR": str(project)}
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(answer.read_text(encoding="utf-8"))
    assert not found.get("errors"), found["errors"]
    return dict(found["data"])


Partitioned = list[tuple[str, list[str], list[str]]]  # (asset, its key's path, its partition keys)


def partitioned_assets(project: Path) -> Partitioned:
    """The partitioned assets and their partitions, as the UI lists them."""
    nodes = ask_the_ui(project, "{ assetNodes { assetKey { path } isPartitioned partitionKeys } }")
    return [
        ("/".join(n["assetKey"]["path"]), n["assetKey"]["path"], n["partitionKeys"])
        for n in nodes["assetNodes"]
        if n["isPartitioned"] and n["partitionKeys"]
    ]


def stale_in_ui(project: Path, partitioned: Partitioned) -> Staleness:
    """Every asset partition the UI calls stale (not fresh, not missing), with its causes: one request
    (one `dagster-graphql` process) for the unpartitioned assets and every partition of ``partitioned``."""

    def causes(found: list[dict[str, Any]]) -> list[str]:
        return [f"{'/'.join(c['key']['path'])} {c['reason']}" for c in found]

    aliases = [
        BY_PARTITION.format(alias=f"a{i}", path=json.dumps(path), partitions=json.dumps(keys))
        for i, (_, path, keys) in enumerate(partitioned)
    ]
    found = ask_the_ui(project, "{" + ASSETS + "".join(aliases) + "\n}")
    stale: Staleness = {}
    for node in found["assetNodes"]:
        if not node["isPartitioned"] and node["staleStatus"] == "STALE":
            stale[("/".join(node["assetKey"]["path"]), "")] = causes(node["staleCauses"])
    for i, (name, _, keys) in enumerate(partitioned):
        by_partition = found[f"a{i}"]
        statuses, why = by_partition["staleStatusByPartition"], by_partition["staleCausesByPartition"]
        for partition, status, reasons in zip(keys, statuses, why, strict=True):
            if status == "STALE":
                stale[(name, partition)] = causes(reasons)
    return stale


def test_what_rag_eval_run_finds_up_to_date_the_ui_shows_fresh(
    cli_run: CliRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cli_run()  # a copy of the tiny project after its first `rag-eval run` (once per worker)
    assert first.ran.returncode == 0, first.ran.stderr[-3000:]
    tiny_project = first.project
    monkeypatch.chdir(tiny_project)  # the instance's storage is relative to the project root
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tiny_project))  # the code server's project
    for name in ("DAGSTER_HOME", "RAG_EVAL_WAREHOUSE_DIR", "RAG_EVAL_GOLDEN_DATASET", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    second = rag_eval(tiny_project, "run")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "0 ran" in second.stdout and "8 up to date" in second.stdout, second.stdout[-600:]

    # nothing changed: the UI agrees that nothing needs to run (before the fix, the assets reading
    # documents, project_settings, configured_setups or leaderboard_settings were "Upstream data")
    partitioned = partitioned_assets(tiny_project)  # the same partitions throughout
    assert {name for name, _, _ in partitioned} >= {"chunks", "retrieval_results"}, partitioned
    assert stale_in_ui(tiny_project, partitioned) == {}

    # one profile edited, and its new version observed as dagster dev's sensor records it
    profiles = tiny_project / "data/retrieval_profiles.yaml"
    profiles.write_text(profiles.read_text(encoding="utf-8").replace("top_k: 4", "top_k: 3"), "utf-8")
    with project_instance(tiny_project) as instance:
        for event in tick(instance, tiny_project, None).asset_events or []:
            if isinstance(event, dg.AssetObservation):
                instance.report_runless_asset_event(event)  # as the daemon stores a tick's events
    stale = stale_in_ui(tiny_project, partitioned)
    assert {partition for _, partition in stale} == {"fixed-60-0|top4", "recursive-120-20|top4"}, stale
    assert all(
        causes == ["retrieval_profile_settings has a new data version"] for causes in stale.values()
    ), stale

    # rag-eval run runs exactly those partitions, and the leaderboard over them ...
    third = rag_eval(tiny_project, "run")
    assert third.returncode == 0, third.stderr[-3000:]
    assert "3 ran" in third.stdout and "5 up to date" in third.stdout, third.stdout[-600:]
    assert run_keys(runs_of(tiny_project, evaluation_id_of(third.stdout))) == [
        ("evaluation_job", "fixed-60-0|top4"),
        ("evaluation_job", "recursive-120-20|top4"),
        ("leaderboard_job", ""),
    ]
    # ... after which the UI, too, finds nothing to run
    assert stale_in_ui(tiny_project, partitioned) == {}
