"""The notebook API and the Dagster pipeline give the same result on the same inputs, row by row: per
question the retrieved chunks (ids, offsets, ranks, every score, who found them), the group and every
metric; and the summary (mean, std, bootstrap CI) the pipeline writes to history. Both run the same four
core steps (cut_corpus, build_indexes / open_indexes, retrieve, token_level_result); this is what fails
when an asset starts doing one of them its own way."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.chunking import build_chunker
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.evaluation.evaluation import TokenLevelEvaluation
from rag_eval_pipeline.core.metrics.names import TOKEN_LEVEL_METRICS
from rag_eval_pipeline.core.metrics.reference_copies import DUPLICATION_COLUMNS
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl
from rag_eval_pipeline.core.settings.configs import load_pipeline_configs
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline.core.tables import records, retrieved_from_frame
from rag_eval_pipeline.core.vector_store.engines import open_vector_store
from rag_eval_pipeline.lib.resources import EmbedderResource
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests

pytestmark = pytest.mark.slow

# Hybrid, so both the dense and the keyword side (and the fusion) are compared.
HYBRID = "  - name: hybrid\n    top_k: 3\n    vector_weight: 0.6\n    keyword_weight: 0.4\n"
PARTITION = {"chunk_config": "fixed-60-0", "profile": "hybrid"}
SUMMARY_PARTS = ("mean", "std", "std_pop", "ci_low", "ci_high")


def test_a_notebook_and_the_pipeline_agree_row_by_row(tiny_project: Path, tmp_path: Path):
    profiles_file = tiny_project / "data/retrieval_profiles.yaml"
    profiles_file.write_text(profiles_file.read_text(encoding="utf-8") + HYBRID, encoding="utf-8")
    resources = tiny_resources(tiny_project, tmp_path)
    with instance_for_tests() as instance:
        _, failures = evaluate_board(
            instance,
            chunk_configs=[PARTITION["chunk_config"]],
            profiles=[PARTITION["profile"]],
            resources=resources,
            show_progress=False,
        )
    assert failures == []
    warehouse = Warehouse(tmp_path / "warehouse")
    results = warehouse.read_current("retrieval_results", PARTITION)
    metrics = warehouse.read_current("retrieval_metrics", PARTITION)
    assert results is not None and metrics is not None
    summary_columns = [f"{m}_{part}" for m in TOKEN_LEVEL_METRICS for part in SUMMARY_PARTS]
    history = warehouse.read_history(RETRIEVAL_SUMMARY, ["n_questions", *summary_columns])
    assert history.unreadable == () and len(history.frame) == 1  # one run of one partition
    summary = history.frame.iloc[0].to_dict()

    embedder = resources["embedder"]
    assert isinstance(embedder, EmbedderResource)
    configs = load_pipeline_configs(tiny_project / "data/chunk_configs.yaml", profiles_file)
    corpus = Corpus.from_folder(tiny_project / "data/corpus")
    dataset = read_token_level_jsonl(tiny_project / "data/datasets/golden_token_level.jsonl", corpus)
    notebook = TokenLevelEvaluation(corpus, dataset).run(
        build_chunker(configs.chunk_config(PARTITION["chunk_config"])),
        embedder.get(),  # the pipeline's model and embedding cache
        open_vector_store(path=tmp_path / "notebook"),  # the pipeline's engine; a collection of its own
        profile=configs.profile(PARTITION["profile"]),
    )

    assert any(h.found_by == "both" for r in notebook.raw_results for h in r.retrieved)  # both sides ran
    retrieved = retrieved_from_frame(results)
    rows = {row["question_id"]: row for row in records(metrics)}
    assert len(rows) == len(metrics) and sorted(rows) == sorted(r.question_id for r in notebook.raw_results)
    for result in notebook.raw_results:
        assert tuple(retrieved.get(result.question_id, ())) == result.retrieved
        row = rows[result.question_id]
        assert row["group"] == result.group
        assert {m: float(row[m]) for m in TOKEN_LEVEL_METRICS} == dict(result.metrics)
        assert result.duplication is not None
        assert {c: int(row[c]) for c in DUPLICATION_COLUMNS} == result.duplication.columns()
    for name, s in notebook.metrics.items():
        pipeline = tuple(float(summary[f"{name}_{part}"]) for part in SUMMARY_PARTS)
        assert pipeline == (s.mean, s.std, s.std_population, s.ci_low, s.ci_high), name
    assert int(summary["n_questions"]) == len(notebook.raw_results)
