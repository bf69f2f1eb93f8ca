"""`rag-eval explain`: a question's way through the stages of one partition, or its line in each,
read from the current retrieval_diagnostics tables of the workspace's warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.chunking import FixedSizeChunker, cut_corpus
from rag_eval_pipeline.core.diagnostics.diagnose import diagnose
from rag_eval_pipeline.core.diagnostics.table import diagnosis_to_frame
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import build_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.tables import corpus_to_frame
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline_tests.core.diagnostics.test_diagnose import CORPUS, TINY

PROFILES = [
    RetrievalProfile("top2", top_k=2),
    RetrievalProfile("hybrid", top_k=1, vector_weight=0.6, keyword_weight=0.4, similarity_threshold=0.3),
]


@pytest.fixture
def warehouse(project: Path, minilm: Any, tmp_path: Path) -> Warehouse:
    """Two partitions' diagnostics and the corpus table, as an evaluation leaves them."""
    w = Warehouse.in_project(project)
    embedder = CachedEmbedder(minilm, EmbeddingCache(tmp_path / "cache.sqlite"))  # type: ignore[arg-type]
    cut = cut_corpus(FixedSizeChunker(60, 0), CORPUS, "fixed-60-0")
    indexes = build_indexes(cut, embedder, EdgeVectorStore(tmp_path / "qdrant"), collection="tiny")
    for profile in PROFILES:
        recorded = retrieve(profile, indexes, [Query(e.question_id, e.query) for e in TINY]).hits
        frame = diagnosis_to_frame(
            diagnose(TINY, cut.chunks, CORPUS, profile, indexes, recorded=recorded), profile.top_k
        )
        frame.insert(0, "profile", profile.name)
        frame.insert(0, "chunk_config", "fixed-60-0")
        frame.insert(0, "run_id", f"run-{profile.name}")
        w.write_table(
            frame, "retrieval_diagnostics", {"chunk_config": "fixed-60-0", "profile": profile.name}, "r"
        )
    w.write_table(corpus_to_frame(CORPUS), "corpus", {}, "r")
    return w


def test_one_partition_shows_the_reference_its_fate_each_stage_and_the_oracles(
    warehouse: Warehouse, capsys: pytest.CaptureFixture[str]
):
    assert main(["explain", "tiny-4", "--chunk-config", "fixed-60-0", "--profile", "top2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("question tiny-4: Which valve feeds the cooling loop, and who leads maintenance?")
    assert "partition fixed-60-0 x top2 (top_k 2), run run-top2" in out
    assert "reference: 64 characters in 2 spans" in out and "alpha/valves.md[82:115] 'Valve V-12 feeds" in out
    assert "retrieved 33 of 64 reference characters (span recall 0.516)" in out
    assert "dense candidates         31   48.4%" in out
    # where each part went, with the text, and the stage lists with ranks and scores
    assert "beta/staff.md[128:159] dense candidates 'Maintenance lead: Amélie Durand'" in out
    assert "  dense:\n      1 pa_chunk_" in out and " *33  alpha/valves.md[60:120]" in out
    assert "lost at dense candidates" in out
    assert "  ranking   1.000  the best 2 chunks of this chunk set" in out
    assert "fused:" not in out  # one retriever: its list is the ranking


def test_a_hybrid_partition_shows_both_lists_and_the_fused_one(
    warehouse: Warehouse, capsys: pytest.CaptureFixture[str]
):
    assert main(["explain", "tiny-3", "--profile", "hybrid"]) == 0  # the only partition left: its detail
    out = capsys.readouterr().out
    assert "  dense:" in out and "  keyword:" in out and "  fused:" in out and "  returned:" in out


def test_several_partitions_give_a_line_each(warehouse: Warehouse, capsys: pytest.CaptureFixture[str]):
    assert main(["explain", "tiny-2"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "question tiny-2: When does the pressure alarm fire?"
    rows = [line for line in lines if line.startswith("fixed-60-0")]
    assert [r.split()[1] for r in rows] == ["hybrid", "top2"]
    assert "--chunk-config C --profile P` shows one partition" in out


def test_unknown_questions_and_partitions_are_errors(
    warehouse: Warehouse, capsys: pytest.CaptureFixture[str]
):
    assert main(["explain", "nope"]) == 2
    assert "question 'nope' is not in retrieval_diagnostics of fixed-60-0 x hybrid, fixed-60-0 x top2" in (
        capsys.readouterr().err
    )
    assert main(["explain", "tiny-1", "--chunk-config", "other"]) == 1
    assert "no retrieval_diagnostics for other" in capsys.readouterr().err


def test_before_any_evaluation_it_says_what_to_run(project: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["explain", "tiny-1"]) == 1
    assert "run `rag-eval run` first" in capsys.readouterr().err
