"""The question_set_health asset run with frames: the hand-made set (its measures known by construction),
with retrieval metrics over no partition, one and three (an input over all partitions is a mapping
whatever their number); its row, its metadata (the warnings), its per-question history, and the
questions' vectors read from the embedding cache, not embedded again."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.embedding.cache import EmbeddingCache
from rag_eval_pipeline.core.embedding.local import MINILM_MODEL_ID
from rag_eval_pipeline.core.question_health.report import QUESTIONS_TABLE
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.tables import corpus_to_frame, questions_to_frame
from rag_eval_pipeline.core.types import sha256_hex
from rag_eval_pipeline.defs.reporting.question_health import question_set_health
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.core.question_health import handmade
from rag_eval_pipeline_tests.defs.frames import run_with_frames

# the tiny project's configured setups stand for the hand-made set's three
SETUPS = {
    "a x p": ("fixed-60-0", "top2"),
    "b x p": ("fixed-60-0", "top4"),
    "c x p": ("recursive-120-20", "top2"),
}


def metrics(setup: str, dataset_sha256: str) -> pd.DataFrame:
    chunk_config, profile = SETUPS[setup]
    return pd.DataFrame(
        [
            {
                "question_id": q,
                "chunk_config": chunk_config,
                "profile": profile,
                "dataset_sha256": dataset_sha256,
                "document_scope": "",
                "span_recall_1000t": value,
            }
            for q, value in handmade.SCORES[setup].items()
        ]
    )


@pytest.mark.parametrize("partitions", [0, 1, 3])
def test_the_asset_measures_the_handmade_set_over_any_number_of_partitions(
    tiny_project: Path, tmp_path: Path, partitions: int
):
    resources = tiny_resources(tiny_project, tmp_path)
    dataset = TokenLevelDataset(tuple(handmade.examples()), name="golden")
    questions = [e.query for e in dataset]
    cache = EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite")  # as retrieval left it: every question
    cache.put_many(MINILM_MODEL_ID, [sha256_hex(q) for q in questions], handmade.vectors())
    cache.close()
    setups = list(SETUPS)[:partitions]
    frames = {"|".join(SETUPS[s]): metrics(s, dataset.sha256) for s in setups}
    row, metadata = run_with_frames(
        question_set_health,
        {
            "corpus": corpus_to_frame(handmade.corpus()),
            "eval_questions": questions_to_frame(dataset),
            "retrieval_metrics": frames,
        },
        {k: resources[k] for k in ("project", "embedder", "warehouse")},
    )
    assert len(row) == 1
    found = row.iloc[0]
    # the measures of the questions alone, whatever was evaluated
    assert (found["n_questions"], found["n_duplicate_pairs"], found["n_keyword_trivial"]) == (9, 1, 1)
    assert (found["n_documents_covered"], found["n_documents"]) == (3, 5)
    assert (found["markup_include"], found["markup_code"]) == (1, 1)
    assert found["dataset_sha256"] == dataset.sha256 and found["question_generators"] == "provided"
    # the vectors came from the cache: no model was loaded, nothing embedded twice
    assert (metadata["question_texts_embedded"], metadata["question_texts_cached"]) == (0, 9)
    # separation needs two setups; the effective sample size then discounts the questions that score alike
    assert found["n_setups"] == partitions
    if partitions == 3:
        assert (found["n_no_setup"], found["n_every_setup"], found["n_same_score"]) == (2, 2, 5)
        assert found["effective_sample_size"] == handmade.EFFECTIVE_SAMPLE_SIZE
    else:
        assert pd.isna(found["n_same_score"])
        assert found["effective_sample_size"] == 8  # nine questions, one near-duplicate pair
    warned = str(metadata["warnings"])
    assert "near-duplicate questions" in warned and "2 of 5 documents (40 %) have no question" in warned
    assert ("score the same on all 3 setups" in warned) == (partitions == 3)
    assert "add questions to the golden set" in warned  # provided questions: not the generator's settings
    assert metadata["n_warnings"] == found["n_warnings"] == (6 if partitions == 3 else 4)
    assert "| documents with a question | 3 of 5 (60 %) |" in str(metadata["health"])

    # one row per question in the history, with the run's provenance
    (history,) = Warehouse(tmp_path / "warehouse").history_files(QUESTIONS_TABLE)
    per_question = pd.read_parquet(history).set_index("question_id")
    assert list(per_question.index) == [q for q, _, _ in handmade.QUESTIONS]
    assert per_question.loc["q-alarm", "keyword_trivial"] and per_question.loc["q-pump", "has_near_duplicate"]
    assert set(per_question["run_id"]) == {found["run_id"]}
