"""A chunk config applied to some documents, end to end on the tiny project: its chunk set covers those
documents only, it is evaluated on the questions about them and listed apart on the leaderboard; applied
to one more document, only that document is cut and embedded (counted), nothing else is recomputed."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, PARTITION_TAG
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.cli.test_runs import evaluation_id_in
from rag_eval_pipeline_tests.conftest import latest_metadata

pytestmark = pytest.mark.slow


def test_a_config_applied_to_documents_is_cut_embedded_and_evaluated_on_them_alone(
    project: Path, capsys: pytest.CaptureFixture
) -> None:
    configs = project / "data/chunk_configs.yaml"
    configs.write_text(
        configs.read_text(encoding="utf-8")
        + "  - name: pumps-only\n    chunker: fixed\n    chunk_size: 70\n    documents: [alpha/pumps.md]\n",
        encoding="utf-8",
    )
    assert main(["run", "--chunk-configs", "fixed-60-0,pumps-only", "--profiles", "top2"]) == 0
    capsys.readouterr()
    warehouse = Warehouse.in_project(project)
    scoped = {"chunk_config": "pumps-only", "profile": "top2"}
    with project_instance(project) as instance:
        first = latest_metadata(instance, "chunks", "pumps-only")
        first_index = latest_metadata(instance, "chunk_index", "pumps-only")
    assert (first["n_documents"], first["documents_cut"], first["documents_reused"]) == (1, 1, 0)
    chunks = warehouse.read_current("chunks", {"chunk_config": "pumps-only"})
    assert chunks is not None and set(chunks["doc_id"]) == {"alpha/pumps.md"}
    assert first_index["n_points"] == len(chunks)
    metrics = warehouse.read_current("retrieval_metrics", scoped)
    assert metrics is not None and sorted(metrics["question_id"]) == ["tiny-1", "tiny-2"]  # about pumps.md
    assert set(metrics["document_scope"]) == {
        "1 document " + str(metrics["document_scope"].iloc[0]).split()[-1]
    }
    board = warehouse.read_current("leaderboard")
    assert board is not None
    row = board.set_index("chunk_config").loc["pumps-only"]
    assert pd.isna(row["rank"]) and bool(row["other_documents"])
    assert row["note"].startswith("other documents: chunk set of 1 document ")
    assert board.set_index("chunk_config").loc["fixed-60-0", "rank"] == 1

    # applied to the staff page as well: only that page is cut and embedded, only this config evaluated
    assert main(["chunk-configs", "apply", "pumps-only", "--document", "beta/staff.md", "--run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("affected_documents: 1\n")
    evaluation_id = evaluation_id_in(out[out.index("evaluation eval-") :])
    with project_instance(project) as instance:
        second = latest_metadata(instance, "chunks", "pumps-only")
        second_index = latest_metadata(instance, "chunk_index", "pumps-only")
        ran = sorted(
            (r.job_name, r.tags.get(PARTITION_TAG, ""))
            for r in instance.get_runs(dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id}))
        )
    assert (second["n_documents"], second["documents_cut"], second["documents_reused"]) == (2, 1, 1)
    chunks_after = warehouse.read_current("chunks", {"chunk_config": "pumps-only"})
    assert chunks_after is not None
    staff_chunks = int((chunks_after["doc_id"] == "beta/staff.md").sum())
    assert staff_chunks > 0
    # embedded: the staff chunks alone (fixed-60-0 cuts other texts; the pumps chunks are cached)
    assert second_index["texts_embedded"] == staff_chunks
    assert second_index["points_written"] == staff_chunks  # and stayed in the collection
    assert ("chunking_job", "fixed-60-0") not in ran  # the whole-corpus config is not recomputed
    assert ("chunking_job", "pumps-only") in ran
    metrics = warehouse.read_current("retrieval_metrics", scoped)
    assert metrics is not None and sorted(metrics["question_id"]) == ["tiny-1", "tiny-2", "tiny-3"]
