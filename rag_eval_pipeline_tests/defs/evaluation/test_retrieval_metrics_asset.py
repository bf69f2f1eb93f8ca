"""The retrieval_metrics asset run with frames (no model, no vector store, no upstream run): step 4 of the
notebook API, token_level_result, per question, and one summary row in the history."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
from rag_eval_pipeline.core.chunking.tokenization import cl100k_tokenizer
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.evaluation.evaluation import token_level_result
from rag_eval_pipeline.core.metrics.names import TOKEN_LEVEL_METRICS, weighted_mean_column
from rag_eval_pipeline.core.metrics.reference_copies import RUN_DUPLICATION_COLUMNS
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, read_token_level_jsonl
from rag_eval_pipeline.core.settings.configs import load_chunk_configs
from rag_eval_pipeline.core.significant_digits import significant
from rag_eval_pipeline.core.spans import merge_intervals
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline.core.tables import (
    chunks_to_frame,
    corpus_to_frame,
    questions_to_frame,
    records,
    retrieved_to_frame,
)
from rag_eval_pipeline.core.types import (
    Document,
    DocumentId,
    PositionAwareChunk,
    QueryTrace,
    QuestionId,
    RetrievedChunk,
)
from rag_eval_pipeline.defs.evaluation.assets import retrieval_metrics
from rag_eval_pipeline_tests.conftest import tiny_corpus, tiny_resources
from rag_eval_pipeline_tests.defs.frames import run_with_frames

CHUNK_CONFIG = "fixed-60-0"
# What retrieval_results records of its run, which the metrics carry over
RETRIEVAL_PROVENANCE = {
    "run_id": "retrieval-run",
    "chunk_config_hash": "c0ffee",
    "profile_hash": "beef",
    "profile_version": "1",
    "retrievers": "knn",
    "embedder_model_id": "minilm",
    "corpus_sha256": "abc",
    "dataset_sha256": "def",
}


def tiny_inputs(project: Path) -> tuple[tuple[PositionAwareChunk, ...], TokenLevelDataset]:
    """The tiny corpus cut by its first chunk config, and its golden dataset."""
    corpus = tiny_corpus()
    config = load_chunk_configs(project / "data/chunk_configs.yaml")[0]
    assert config.name == CHUNK_CONFIG
    cut = cut_corpus(build_chunker(config), corpus.documents, config.name).chunks
    return cut, read_token_level_jsonl(project / "data/datasets/golden_token_level.jsonl", corpus)


def scripted_hits(
    cut: tuple[PositionAwareChunk, ...], dataset: TokenLevelDataset, find: bool
) -> dict[QuestionId, list[RetrievedChunk]]:
    """Per question but the last (which retrieves nothing): the first chunk overlapping its first span
    when ``find``, then the corpus's first chunk (a miss for most)."""
    hits: dict[QuestionId, list[RetrievedChunk]] = {}
    for example in dataset.examples[:-1]:
        span = example.relevant_spans[0]
        hit = next(c for c in cut if c.doc_id == span.doc_id and c.start < span.end and span.start < c.end)
        found = (hit, cut[0]) if find else (cut[0],)
        hits[example.question_id] = [
            RetrievedChunk(example.question_id, rank, c.chunk_id, c.doc_id, c.start, c.end, 1 / rank, c.text)
            for rank, c in enumerate(found, start=1)
        ]
    return hits


def metrics_with_frames(
    project: Path,
    work: Path,
    profile: str,
    hits: dict[QuestionId, list[RetrievedChunk]],
    traces: dict[QuestionId, QueryTrace] | None = None,
    dataset: TokenLevelDataset | None = None,
    **provenance: object,
) -> tuple[pd.DataFrame, dict[str, object]]:
    cut, golden = tiny_inputs(project)
    dataset = dataset or golden
    resources = tiny_resources(project, work)
    return run_with_frames(
        retrieval_metrics,
        {
            "corpus": corpus_to_frame(tiny_corpus()),
            "chunks": chunks_to_frame(cut),
            "eval_questions": questions_to_frame(dataset),
            "retrieval_results": retrieved_to_frame(hits, traces).assign(
                **RETRIEVAL_PROVENANCE, **provenance
            ),
        },
        {k: resources[k] for k in ("project", "warehouse", "langsmith", "evaluation")},
        {"chunk_config": CHUNK_CONFIG, "profile": profile},
    )


def test_each_questions_costs_sit_beside_its_metrics(tiny_project: Path, tmp_path: Path):
    """Its search latency and rewrite tokens (from retrieval_results' traces), its cl100k tokens; the
    index's size carried over; the latency percentiles in the summary row and the UI's metadata."""
    cut, dataset = tiny_inputs(tiny_project)
    hits = scripted_hits(cut, dataset, find=True)
    traces = {
        qid: QueryTrace(qid, "the query", search_ms=1.5 * (i + 1), rewrite_prompt_tokens=20 + i)
        for i, qid in enumerate(hits)
    }
    frame, metadata = metrics_with_frames(
        tiny_project, tmp_path, "top2", hits, traces, index_bytes=4096.0, index_tokens=900.0, rewriter=""
    )
    rows = frame.set_index("question_id")
    latency = [1.5 * (i + 1) for i in range(len(hits))]
    assert rows.loc[list(hits), "latency_ms"].tolist() == latency
    assert pd.isna(rows.loc[dataset.examples[-1].question_id, "latency_ms"])  # nothing found: no row, unknown
    assert rows.loc[list(hits), "rewrite_prompt_tokens"].tolist() == [20 + i for i in range(len(hits))]
    assert rows["query_tokens"].tolist() == cl100k_tokenizer().count_tokens(
        [e.query for e in dataset.examples]
    )
    assert (frame["index_bytes"] == 4096.0).all() and (frame["index_tokens"] == 900.0).all()
    assert metadata["latency_p95_ms"] == significant(float(np.percentile(latency, 95)))
    history = Warehouse(tmp_path / "warehouse").read_history(RETRIEVAL_SUMMARY, ["latency_p50_ms"])
    assert history.frame["latency_p50_ms"].tolist() == pytest.approx([float(np.percentile(latency, 50))])


def test_retrieval_metrics_scores_frames_as_token_level_result_does(tiny_project: Path, tmp_path: Path):
    cut, dataset = tiny_inputs(tiny_project)
    hits = scripted_hits(cut, dataset, find=True)

    frame, metadata = metrics_with_frames(tiny_project, tmp_path, "top2", hits)

    expected = token_level_result(dataset.examples, hits, cut, 2, tiny_corpus())
    rows = {row["question_id"]: row for row in records(frame)}
    assert sorted(rows) == sorted(r.question_id for r in expected.raw_results)
    for result in expected.raw_results:
        assert {m: float(rows[result.question_id][m]) for m in TOKEN_LEVEL_METRICS} == dict(result.metrics)
        assert rows[result.question_id]["group"] == result.group
    assert rows[dataset.examples[-1].question_id]["span_recall"] == 0.0  # nothing retrieved scores 0
    assert 0.0 < expected.metrics["span_recall"].mean < 1.0
    assert set(frame["chunk_config"]) == {CHUNK_CONFIG} and set(frame["profile"]) == {"top2"}
    assert set(frame["retrieval_run_id"]) == {"retrieval-run"} and set(frame["chunk_config_hash"]) == {
        "c0ffee"
    }
    assert set(frame["question_generators"]) == {"provided"}  # the golden set: no generator
    history = Warehouse(tmp_path / "warehouse").read_history(
        RETRIEVAL_SUMMARY, ["n_questions", "span_iou_mean"]
    )
    assert history.frame["n_questions"].tolist() == [len(dataset.examples)]
    assert history.frame["span_iou_mean"].tolist() == pytest.approx([expected.metrics["span_iou"].mean])
    # the UI's value: the mean at four significant digits, every metric of the table
    for metric in TOKEN_LEVEL_METRICS:
        assert metadata[metric] == significant(expected.metrics[metric].mean), metric
    assert any(significant(s.mean) != s.mean for s in expected.metrics.values())  # some were rounded
    assert metadata["span_iou"] == pytest.approx(expected.metrics["span_iou"].mean, abs=5e-5)


def test_references_in_duplicated_text_are_counted_in_the_rows_metadata_and_summary(
    tiny_project: Path, tmp_path: Path
):
    cut, dataset = tiny_inputs(tiny_project)
    hits = scripted_hits(cut, dataset, find=True)
    first = dataset.examples[0]
    reference = merge_intervals(first.relevant_spans)
    [(doc_id, [(start, end), *_])] = list(reference.items())[:1]
    passage = tiny_corpus()[doc_id].text[start:end]
    # a document that quotes the first question's first reference twice: two extra copies
    copied = Document(DocumentId("zz/quotes.md"), f"{passage}\n\n{passage}\n", "zz")
    corpus = Corpus((*tiny_corpus().documents, copied))
    resources = tiny_resources(tiny_project, tmp_path)
    frame, metadata = run_with_frames(
        retrieval_metrics,
        {
            "corpus": corpus_to_frame(corpus),
            "chunks": chunks_to_frame(cut),
            "eval_questions": questions_to_frame(dataset),
            "retrieval_results": retrieved_to_frame(hits).assign(**RETRIEVAL_PROVENANCE),
        },
        {k: resources[k] for k in ("project", "warehouse", "langsmith", "evaluation")},
        {"chunk_config": CHUNK_CONFIG, "profile": "top2"},
    )
    expected = token_level_result(dataset.examples, hits, cut, 2, corpus).duplication
    assert expected is not None and expected.questions >= 1 and expected.extra_copies >= 2
    rows = frame.set_index("question_id")
    assert rows.loc[first.question_id, "duplicated_references"] >= 1
    assert rows["duplicated_references"].dtype.kind == "i"  # a count, not a float metric
    assert int(rows["extra_reference_copies"].sum()) == expected.extra_copies
    assert {c: metadata[c] for c in RUN_DUPLICATION_COLUMNS} == expected.run_columns()
    assert metadata["duplicated_reference_text"] == expected.describe(len(dataset.examples))
    history = Warehouse(tmp_path / "warehouse").read_history(
        RETRIEVAL_SUMMARY, [*RUN_DUPLICATION_COLUMNS, "span_iou_std", "span_iou_std_pop"]
    )
    row = history.frame.iloc[0]
    assert [int(row[c]) for c in RUN_DUPLICATION_COLUMNS] == list(expected.run_columns().values())
    per_question = rows["span_iou"].to_numpy(dtype=float)
    assert row["span_iou_std_pop"] == pytest.approx(float(per_question.std(ddof=0)))
    assert row["span_iou_std"] == pytest.approx(float(per_question.std(ddof=1)))


def test_questions_with_traffic_counts_get_weighted_means_beside_the_plain_ones(
    tiny_project: Path, tmp_path: Path
):
    cut, golden = tiny_inputs(tiny_project)
    counts = [5] + [1] * (len(golden.examples) - 1)
    dataset = replace(
        golden,
        examples=tuple(
            replace(e, metadata={**e.metadata, "count": c})
            for e, c in zip(golden.examples, counts, strict=True)
        ),
    )
    hits = scripted_hits(cut, dataset, find=True)

    frame, metadata = metrics_with_frames(tiny_project, tmp_path, "top2", hits, dataset=dataset)

    expected = token_level_result(dataset.examples, hits, cut, 2, tiny_corpus())
    assert expected.weighted_means and frame.set_index("question_id")["query_count"].tolist() == counts
    column = weighted_mean_column("span_recall_1000t")
    history = Warehouse(tmp_path / "warehouse").read_history(
        RETRIEVAL_SUMMARY, ["span_recall_1000t_mean", column]
    )
    assert history.frame[column].tolist() == pytest.approx([expected.weighted_means["span_recall_1000t"]])
    assert metadata[column] == significant(expected.weighted_means["span_recall_1000t"])
    table = str(metadata["confidence_intervals"])
    assert "traffic-weighted mean" in table and "each question counts as often as users asked it" in table


def test_an_unweighted_set_has_no_count_column_and_no_weighted_means(tiny_project: Path, tmp_path: Path):
    cut, dataset = tiny_inputs(tiny_project)
    frame, metadata = metrics_with_frames(
        tiny_project, tmp_path, "top2", scripted_hits(cut, dataset, find=True)
    )
    assert "query_count" not in frame.columns and not [k for k in metadata if k.endswith("_weighted_mean")]
    [summary] = Warehouse(tmp_path / "warehouse").history_table_dir(RETRIEVAL_SUMMARY).rglob("*.parquet")
    assert not [c for c in pd.read_parquet(summary).columns if c.endswith("_weighted_mean")]
