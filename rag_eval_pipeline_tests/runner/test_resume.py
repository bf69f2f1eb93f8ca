"""A run killed while chunk_index embeds resumes from failure without recomputing finished work.

A child process runs corpus -> chunks -> chunk_index for one chunk config on a persistent (sqlite)
instance, with the real MiniLM behind a gate: after HOLD_AFTER_BATCHES batches it writes a marker and
waits, and the test kills it with SIGKILL. The test then marks the run failed and re-executes it from
failure, as the UI's "Re-execute from failure" does.
"""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.embedding.base import Embedder, Vectors
from rag_eval_pipeline.core.embedding.cache import EmbeddingCache
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.partitions import CHUNK_CONFIG
from rag_eval_pipeline.lib.resources import EmbedderResource
from rag_eval_pipeline_tests.conftest import REPO, latest_metadata, tiny_resources, write_tiny_project

pytestmark = pytest.mark.slow

WORK_ENV = "RAG_EVAL_TEST_RESUME_WORK"  # the folder holding the project, caches, warehouse and gate
CHUNK_CONFIG_NAME = "fixed-60-0"
BATCH_SIZE = 2
HOLD_AFTER_BATCHES = 2


class GatedEmbedder:
    """Logs every batch it embeds (one JSON line, flushed) and, while the file ``hold`` exists, stops
    before batch ``HOLD_AFTER_BATCHES + 1``: it writes ``held`` and waits. The batches before it are
    then in the embedding cache (it commits per batch), which is what the test checks after the kill."""

    def __init__(self, inner: Embedder, gate: Path) -> None:
        self.inner = inner
        self.gate = gate
        self.batches = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.batches == HOLD_AFTER_BATCHES and (self.gate / "hold").exists():
            (self.gate / "held").write_text(str(os.getpid()))
            while (self.gate / "hold").exists():  # until killed
                time.sleep(0.05)
        vectors = self.inner.embed(texts)
        self.batches += 1
        with (self.gate / "batches.jsonl").open("a", encoding="utf-8") as log:
            log.write(json.dumps({"pid": os.getpid(), "texts": list(texts)}) + "\n")
        return vectors


class GatedEmbedderResource(EmbedderResource):
    gate_dir: str

    def model(self) -> Embedder:
        return GatedEmbedder(super().model(), Path(self.gate_dir))


def resume_job() -> dg.JobDefinition:
    """corpus -> chunks -> chunk_index on the project's assets, with test paths and the gated embedder
    (module level, so both processes reconstruct it)."""
    work = Path(os.environ[WORK_ENV])
    resources = tiny_resources(work / "project", work)
    resources["embedder"] = GatedEmbedderResource(
        cache_path=str(work / "cache" / "embeddings.sqlite"),
        texts_per_call=BATCH_SIZE,
        gate_dir=str(work / "gate"),
    )
    job = dg.define_asset_job(
        "resume_job",
        selection=dg.AssetSelection.assets("corpus", "chunks", "chunk_index"),
        executor_def=dg.in_process_executor,
    )
    defs = dg.Definitions.merge(build_definitions(resources), dg.Definitions(jobs=[job]))
    return defs.resolve_job_def("resume_job")


CHILD = f"""
import dagster as dg
from rag_eval_pipeline_tests.runner.test_resume import resume_job
with dg.DagsterInstance.get() as instance:
    dg.execute_job(
        dg.reconstructable(resume_job), instance, tags={{"dagster/partition": "{CHUNK_CONFIG_NAME}"}}
    )
"""


def wait_for(marker: Path, child: subprocess.Popen[bytes], log: Path, timeout_s: float = 600.0) -> None:
    """Until the child writes ``marker``; fails at once with its output if it exits first."""
    deadline = time.monotonic() + timeout_s
    while not marker.exists():
        if child.poll() is not None:
            pytest.fail(f"the run ended before the gate (exit {child.returncode}):\n{log.read_text()}")
        if time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"no {marker.name} after {timeout_s} s:\n{log.read_text()}")
        time.sleep(0.1)


def logged_batches(gate: Path) -> list[tuple[int, list[str]]]:
    lines = (gate / "batches.jsonl").read_text(encoding="utf-8").splitlines()
    return [(int(entry["pid"]), list(entry["texts"])) for entry in map(json.loads, lines)]


def step_keys(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType) -> set[str]:
    return {e.step_key for e in instance.all_logs(run_id, of_type=kind) if e.step_key}


def test_killed_run_resumes_from_failure_without_recomputing_finished_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    write_tiny_project(tmp_path / "project")
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "hold").touch()
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")  # sqlite storage in home
    monkeypatch.setenv(WORK_ENV, str(tmp_path))

    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions(CHUNK_CONFIG, [CHUNK_CONFIG_NAME])
        child_log = tmp_path / "child.log"
        with child_log.open("wb") as out:
            child = subprocess.Popen(
                [sys.executable, "-c", CHILD],
                cwd=REPO,
                env={**os.environ, "DAGSTER_HOME": str(home), WORK_ENV: str(tmp_path)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for(gate / "held", child, child_log)
        finally:
            child.send_signal(signal.SIGKILL)  # no-op if it already ended
            child.wait()

        # What the killed run left: two finished steps, one started, the first batches in the cache.
        (killed,) = instance.get_runs()
        assert killed.status == dg.DagsterRunStatus.STARTED  # nobody told Dagster it died
        assert step_keys(instance, killed.run_id, dg.DagsterEventType.STEP_SUCCESS) == {"corpus", "chunks"}
        assert step_keys(instance, killed.run_id, dg.DagsterEventType.STEP_START) == {
            "corpus",
            "chunks",
            "chunk_index",
        }
        first = logged_batches(gate)
        assert len(first) == HOLD_AFTER_BATCHES and {pid for pid, _ in first} == {child.pid}
        cached = {text for _, texts in first for text in texts}
        cache = EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite")
        assert cache.count() == len(cached)
        cache.close()

        instance.report_run_failed(killed, "killed by the test")  # what run monitoring would do
        (gate / "hold").unlink()
        with dg.execute_job(
            dg.reconstructable(resume_job),
            instance,
            tags=killed.tags,  # the partition; the UI copies the parent's tags, execute_job does not
            reexecution_options=dg.ReexecutionOptions.from_failure(killed.run_id, instance),
        ) as resumed:
            assert resumed.success
            started = {e.step_key for e in resumed.all_events if e.is_step_start}
            materialized = {e.asset_key for e in resumed.get_asset_materialization_events()}
        assert started == {"chunk_index"}
        assert materialized == {dg.AssetKey("chunk_index")}
        for asset in ("corpus", "chunks"):  # their only materialization is the killed run's
            records = instance.fetch_materializations(dg.AssetKey(asset), limit=10).records
            assert [r.run_id for r in records] == [killed.run_id]
        index = latest_metadata(instance, "chunk_index", CHUNK_CONFIG_NAME)

    chunk_texts = list(
        pd.read_parquet(
            Warehouse(tmp_path / "warehouse").current_path("chunks", {CHUNK_CONFIG: CHUNK_CONFIG_NAME})
        )["text"]
    )
    later = logged_batches(gate)[len(first) :]
    assert {pid for pid, _ in later} == {os.getpid()}  # the resumed run executed in this process
    second = [text for _, texts in later for text in texts]
    assert len(set(chunk_texts)) > len(cached) > 0
    assert sorted(second) == sorted(set(chunk_texts) - cached)  # each missing text once, none twice
    assert index["texts_embedded"] == len(second)
    assert index["embedding_cache_hits"] == sum(text in cached for text in chunk_texts)
    assert index["n_points"] == len(chunk_texts)
