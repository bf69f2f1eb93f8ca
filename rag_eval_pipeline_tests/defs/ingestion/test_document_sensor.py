"""The document sensor on a real Dagster instance, and an edited document through the real graph: only
its new chunks are embedded, moved ground truth is re-anchored, lost ground truth is counted as stale."""

import json
import logging
import os
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.corpus.corpus_state import CorpusCursor
from rag_eval_pipeline.core.runs.run_tags import DATA_VERSION_TAG, DOCUMENTS_TAG_PREFIX
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline.core.types import sha256_hex
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.defs.ingestion.assets import corpus as corpus_asset
from rag_eval_pipeline.defs.ingestion.document_sensor import document_sensor
from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.conftest import TINY_DOCS, latest_metadata, tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests

PUMPS = "alpha/pumps.md"


def tick(instance: dg.DagsterInstance, project: Path, cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"project": ProjectResource(root=str(project))}
    )
    result = document_sensor(context)
    assert isinstance(result, dg.SensorResult) and result.cursor is not None
    return result


def skipped(result: dg.SensorResult) -> str:
    """The skip message of a tick that requested nothing."""
    assert not result.run_requests and result.skip_reason is not None
    return result.skip_reason.skip_message or ""


def only_request(result: dg.SensorResult) -> dg.RunRequest:
    (request,) = result.run_requests or []
    assert isinstance(request, dg.RunRequest) and request.run_key is not None
    return request


def materialize_corpus(instance: dg.DagsterInstance, project: Path, work: Path) -> None:
    resources = {
        "project": ProjectResource(root=str(project)),
        "io_manager": ParquetIOManagerFactory(base_dir=str(work / "warehouse")),
    }
    assert dg.materialize([corpus_asset], instance=instance, resources=resources).success


def touch(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))


def test_sensor_targets_the_ingestion_job_and_is_on_by_default():
    assert document_sensor.job_name == "ingestion_job"
    assert document_sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert document_sensor.minimum_interval_seconds == 30


def test_first_tick_requests_a_run_only_when_the_corpus_is_not_materialized_as_it_is(
    tiny_project: Path, tmp_path: Path
):
    with instance_for_tests() as instance:
        never = tick(instance, tiny_project, None)
        assert only_request(never).tags == {f"{DOCUMENTS_TAG_PREFIX}initial": "3"}

        materialize_corpus(instance, tiny_project, tmp_path)
        same = tick(instance, tiny_project, None)
        assert "materialized from exactly these" in skipped(same)

        (tiny_project / "data/corpus" / PUMPS).write_text("# Pumps\n\nReplaced.\n", encoding="utf-8")
        differs = tick(instance, tiny_project, None)
        assert only_request(differs)
        # the cursor is the folder's state, whose hash is the corpus hash the asset computes
        state = CorpusCursor.from_json(differs.cursor or "").state
        assert state.corpus_sha256 == Corpus.from_folder(tiny_project / "data/corpus").sha256


def test_edits_adds_and_removals_request_one_run_each_and_a_touch_does_not(
    tiny_project: Path, tmp_path: Path
):
    folder = tiny_project / "data/corpus"
    with instance_for_tests() as instance:
        materialize_corpus(instance, tiny_project, tmp_path)
        cursor = tick(instance, tiny_project, None).cursor

        unchanged = tick(instance, tiny_project, cursor)
        assert skipped(unchanged) == "no document changed (3 watched, 0 re-hashed)"

        touch(folder / PUMPS)
        touched = tick(instance, tiny_project, cursor)
        assert "1 re-hashed" in skipped(touched)
        assert touched.cursor != cursor  # the new mtime is kept, so the next tick hashes nothing
        cursor = touched.cursor
        assert "0 re-hashed" in skipped(tick(instance, tiny_project, cursor))

        keys = []
        edits = [
            (
                lambda: (folder / PUMPS).write_text(TINY_DOCS[PUMPS] + "Edited.\n", encoding="utf-8"),
                {f"{DOCUMENTS_TAG_PREFIX}changed": PUMPS},
            ),
            (
                lambda: (folder / "beta/new.md").write_text("# New\n\nA new document.\n", encoding="utf-8"),
                {f"{DOCUMENTS_TAG_PREFIX}added": "beta/new.md"},
            ),
            (
                lambda: (folder / "alpha/valves.md").unlink(),
                {f"{DOCUMENTS_TAG_PREFIX}removed": "alpha/valves.md"},
            ),
            # undoing the first edit returns to an earlier content: still a new run, under a new key
            (
                lambda: (folder / PUMPS).write_text(TINY_DOCS[PUMPS], encoding="utf-8"),
                {f"{DOCUMENTS_TAG_PREFIX}changed": PUMPS},
            ),
        ]
        for edit, tags in edits:
            edit()
            result = tick(instance, tiny_project, cursor)
            request = only_request(result)
            assert request.tags == tags
            state = CorpusCursor.from_json(result.cursor or "").state
            assert state.corpus_sha256[:16] in (request.run_key or "")
            keys.append(request.run_key)
            again = tick(instance, tiny_project, result.cursor)  # the new cursor: nothing more to do
            assert skipped(again).startswith("no document changed")
            # a retried tick (same cursor, same folder) asks for the same key, which Dagster deduplicates
            assert only_request(tick(instance, tiny_project, cursor)).run_key == request.run_key
            cursor = result.cursor
        assert len(set(keys)) == len(keys)


def test_an_html_edit_requests_ingestion_and_an_unknown_extension_does_not(tiny_project: Path):
    folder = tiny_project / "data/corpus"
    page = folder / "beta/rota.html"
    page.write_text("<h1>Rota</h1><ul><li>Mon: Zoë</li><li>Tue: Amélie</li></ul>", encoding="utf-8")
    with instance_for_tests() as instance:
        cursor = tick(instance, tiny_project, None).cursor
        assert skipped(tick(instance, tiny_project, cursor)) == "no document changed (4 watched, 0 re-hashed)"

        (folder / "beta/scan.pdf").write_bytes(b"%PDF-1.4 \xff")
        (folder / "alpha/.notes.md").write_text("hidden", encoding="utf-8")
        assert skipped(tick(instance, tiny_project, cursor)).startswith("no document changed (4 watched")

        page.write_text("<h1>Rota</h1><ul><li>Mon: Zoë</li><li>Tue: Tomasz</li></ul>", encoding="utf-8")
        result = tick(instance, tiny_project, cursor)
        assert only_request(result).tags == {f"{DOCUMENTS_TAG_PREFIX}changed": "beta/rota.html"}
        state = CorpusCursor.from_json(result.cursor or "").state
        assert state.corpus_sha256 == Corpus.from_folder(folder).sha256


def test_many_changes_are_named_briefly(tiny_project: Path, tmp_path: Path):
    folder = tiny_project / "data/corpus"
    with instance_for_tests() as instance:
        cursor = tick(instance, tiny_project, None).cursor
        for i in range(5):
            (folder / f"gamma/doc{i}.md").parent.mkdir(exist_ok=True)
            (folder / f"gamma/doc{i}.md").write_text(f"# Doc {i}\n", encoding="utf-8")
        request = only_request(tick(instance, tiny_project, cursor))
        assert request.tags == {
            f"{DOCUMENTS_TAG_PREFIX}added": "gamma/doc0.md, gamma/doc1.md, gamma/doc2.md (+2 more)"
        }


# An edit of one document: a sentence inserted before tiny-1's excerpt (which moves), and tiny-2's
# excerpt rewritten (so it no longer occurs anywhere).
INSERTED = "It was installed in 2019 and overhauled in 2023. "
EDITED_PUMPS = (
    TINY_DOCS[PUMPS]
    .replace("The main pump runs", INSERTED + "The main pump runs")
    .replace(
        "A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.",
        "Alarm limits are listed on the control panel.",
    )
)


FIXED = {"chunk_config": "fixed-60-0"}
FIXED_TOP2 = {"chunk_config": "fixed-60-0", "profile": "top2"}


def chunk_texts(warehouse: Warehouse) -> pd.DataFrame:
    return pd.read_parquet(warehouse.current_path("chunks", FIXED))


@pytest.mark.slow
def test_an_edited_document_reembeds_its_new_chunks_and_reanchors_its_ground_truth(
    tiny_project: Path, tmp_path: Path
):
    # no retrievability filter: synthetic_questions would otherwise embed passages through the shared
    # cache, and the count below is about what chunk_index embeds
    (tiny_project / "data/generation.yaml").write_text(
        "token_level:\n  retrievability_top_n: 0\n", encoding="utf-8"
    )
    resources = tiny_resources(tiny_project, tmp_path)
    warehouse = Warehouse(tmp_path / "warehouse")
    defs = build_definitions(resources)
    ingestion = defs.resolve_job_def("ingestion_job")
    chunking = defs.resolve_job_def("chunking_job")
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["fixed-60-0"])
        assert ingestion.execute_in_process(instance=instance).success
        assert chunking.execute_in_process(
            instance=instance,
            partition_key="fixed-60-0",
            asset_selection=[dg.AssetKey("chunks"), dg.AssetKey("chunk_index")],
        ).success
        before = chunk_texts(warehouse)
        assert (
            latest_metadata(instance, "chunk_index", "fixed-60-0")["texts_embedded"]
            == before["text"].nunique()
        )
        first = tick(instance, tiny_project, None)
        assert skipped(first)  # the corpus was just materialized from this folder

        (tiny_project / "data/corpus" / PUMPS).write_text(EDITED_PUMPS, encoding="utf-8")
        request = only_request(tick(instance, tiny_project, first.cursor))
        assert request.tags == {f"{DOCUMENTS_TAG_PREFIX}changed": PUMPS}
        reingested = ingestion.execute_in_process(instance=instance, tags=request.tags)
        assert reingested.success
        assert chunking.execute_in_process(
            instance=instance,
            partition_key="fixed-60-0",
            asset_selection=[dg.AssetKey("chunks"), dg.AssetKey("chunk_index")],
        ).success

        # (a) only the edited document's new chunk texts reached the model
        after = chunk_texts(warehouse)
        new_texts = set(after["text"]) - set(before["text"])
        assert new_texts and set(after.loc[after["doc_id"] != PUMPS, "text"]) <= set(before["text"])
        assert set(after.loc[after["text"].isin(new_texts), "doc_id"]) == {PUMPS}
        manifest = pd.read_parquet(warehouse.current_path("chunk_index", FIXED))
        index_meta = latest_metadata(instance, "chunk_index", "fixed-60-0")
        assert index_meta["texts_embedded"] == int(manifest["texts_embedded"].iloc[0]) == len(new_texts)
        assert len(new_texts) < after["text"].nunique()

        # (b) tiny-1 moved with its excerpt, tiny-2 lost its excerpt, the other documents are untouched
        questions = pd.read_parquet(warehouse.current_path("eval_questions")).set_index("question_id")
        assert questions["ground_truth_status"].to_dict() == {
            "tiny-1": "reanchored",
            "tiny-2": "stale",
            "tiny-3": "valid",
            "tiny-4": "valid",
        }
        (moved,) = questions.loc["tiny-1", "relevant_spans"]
        assert (
            EDITED_PUMPS[moved["start"] : moved["end"]] == moved["text"] == "The main pump runs at 1,450 rpm"
        )
        assert moved["start"] == TINY_DOCS[PUMPS].index("The main pump runs") + len(INSERTED)
        assert "no longer occurs in alpha/pumps.md" in questions.loc["tiny-2", "stale_reason"]
        assert questions.loc["tiny-1", "stale_reason"] == ""
        meta = latest_metadata(instance, "eval_questions")
        assert (meta["n_questions"], meta["n_reanchored"], meta["n_stale"]) == (3, 1, 1)
        warnings = [
            e.user_message for e in instance.all_logs(reingested.run_id) if e.level == logging.WARNING
        ]
        assert any("stale" in w and "tiny-2" in w for w in warnings)

        # (c) the evaluation says how many questions were stale and does not score them
        board, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top2"],
            resources=resources,
            show_progress=False,
        )
        assert failures == [] and board is not None
        metrics = pd.read_parquet(warehouse.current_path("retrieval_metrics", FIXED_TOP2))
        assert sorted(metrics["question_id"]) == ["tiny-1", "tiny-3", "tiny-4"]
        assert (metrics["n_stale_questions"] == 1).all()
        key = dg.MultiPartitionKey(FIXED_TOP2)
        assert latest_metadata(instance, "retrieval_metrics", key)["n_stale_questions"] == 1
        summaries = pd.concat(pd.read_parquet(p) for p in warehouse.history_files(RETRIEVAL_SUMMARY))
        assert list(summaries["n_stale_questions"]) == [1]
        assert list(board["n_stale_questions"]) == [1]
        results = pd.read_parquet(warehouse.current_path("retrieval_results", FIXED_TOP2))
        assert "tiny-2" not in set(results["question_id"])
        # the ledger still knows pumps.md's old version: the stale question stays stale, nothing fails
        ledger = json.loads(warehouse.anchors_path("golden_token_level").read_text(encoding="utf-8"))
        assert ledger["documents"][PUMPS] == sha256_hex(TINY_DOCS[PUMPS])
        assert ledger["documents"]["beta/staff.md"] == sha256_hex(TINY_DOCS["beta/staff.md"])


def test_the_documents_version_is_reported_when_it_changes(tiny_project: Path):
    """So the UI shows the corpus stale as soon as a document changed (lib/freshness.py): an
    observation of the `documents` source with the corpus's version, again only after an edit."""
    from rag_eval_pipeline.core.project.source_versions import source_versions

    def observed(result: dg.SensorResult) -> list[str]:
        events = [e for e in result.asset_events or [] if isinstance(e, dg.AssetObservation)]
        for event in events:
            instance.report_runless_asset_event(event)  # as the daemon stores a tick's events
        return [str(e.tags.get(DATA_VERSION_TAG)) for e in events]

    with instance_for_tests() as instance:
        first = tick(instance, tiny_project, None)
        assert observed(first) == [source_versions(ProjectResource(root=str(tiny_project)).files()).documents]
        assert observed(tick(instance, tiny_project, first.cursor)) == []
        pumps = tiny_project / "data/corpus" / PUMPS
        pumps.write_text(pumps.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
        edited = tick(instance, tiny_project, first.cursor)
        (version,) = observed(edited)
        assert version not in observed(first) and only_request(edited)
