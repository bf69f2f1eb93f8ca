"""Chunk-level LLM generation (density, types, keywords, source chunks) against a scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker, chunk_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.llm_chunk_level import (
    LLMChunkLevelGenerator,
    expected_keywords,
    sample_tasks,
)
from rag_eval_pipeline.core.llm.cache import ResponseCache
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline.core.llm.retry import RetryPolicy
from rag_eval_pipeline.core.questions.datasets import ChunkLevelDataset, read_chunk_level_jsonl, write_jsonl
from rag_eval_pipeline.core.tables import chunk_questions_from_frame, chunk_questions_to_frame
from rag_eval_pipeline.core.types import ChunkId, DocumentId, PositionAwareChunk
from rag_eval_pipeline_tests.conftest import tiny_corpus
from rag_eval_pipeline_tests.core.generation.scripted_llm import answer_for, chunk_level_reply
from rag_eval_pipeline_tests.openai_server import openai_server


def chunks_of_tiny_corpus() -> list:
    corpus = tiny_corpus()
    assert isinstance(corpus, Corpus)
    return chunk_corpus(RecursiveCharacterChunker(60, 0), corpus)


def test_sparse_chunks_are_skipped_and_questions_carry_type_keywords_and_sources(tmp_path: Path) -> None:
    chunks = chunks_of_tiny_corpus()
    by_id = {c.chunk_id: c for c in chunks}
    with openai_server() as (url, script):
        script.responder = chunk_level_reply
        model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=url)
        client = LLMClient(model, cache=ResponseCache(tmp_path / "r.sqlite"))
        result = LLMChunkLevelGenerator(client, max_chunks=len(chunks)).generate(chunks)
    sparse = [r for r in result.rejections if r.reason == "sparse_chunk"]
    assert sparse, "the headings-only chunks are classified SPARSE"
    assert all(len(by_id[r.source_chunk_ids[0]].text.split()) < 8 for r in sparse)
    dense_chunks = len(chunks) - len(sparse)
    assert [r for r in result.rejections if r.reason != "sparse_chunk"] == []
    assert len({e.metadata["source_chunk_ids"][0] for e in result.examples}) == dense_chunks
    types = {e.metadata["question_type"] for e in result.examples}
    assert types == {"FACTUAL", "MULTI_HOP"}
    for example in result.examples:
        assert 3 <= len(example.metadata["keywords"]) <= 5
        assert list(example.relevant_chunk_ids) == example.metadata["source_chunk_ids"]
        sources = [by_id[c] for c in example.relevant_chunk_ids]
        if example.metadata["question_type"] == "MULTI_HOP":
            assert len(sources) == 2 and sources[0].doc_id == sources[1].doc_id
            assert sources[0].end <= sources[1].start  # the chunk and the one after it
        assert example.metadata["density"] == "DENSE" and example.metadata["generator"] == "llm-chunk-level"
        # the reference answer written for this question, from its source chunks' text
        kind = example.metadata["question_type"]
        assert example.reference_answer == answer_for(
            kind, " ".join(" ".join(c.text for c in sources).split())
        )
        # expected keywords: the keywords the chunks hold and the question does not name
        keywords = example.metadata["keywords"]
        assert example.expected_keywords and set(example.expected_keywords) <= set(keywords)
        assert [k for k in keywords if k in example.query] == [
            k for k in keywords if k not in example.expected_keywords
        ]


def test_reference_answers_and_expected_keywords_survive_jsonl_and_frames(tmp_path: Path) -> None:
    chunks = chunks_of_tiny_corpus()
    with openai_server() as (url, script):
        script.responder = chunk_level_reply
        client = LLMClient(OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=url))
        result = LLMChunkLevelGenerator(client, max_chunks=6, seed=2).generate(chunks)
    generation_prompts = [
        r["messages"][1]["content"] for r in script.chat_requests if "Write " in r["messages"][1]["content"]
    ]
    assert generation_prompts and all("a reference answer (one or two" in p for p in generation_prompts)
    dataset = ChunkLevelDataset(result.examples, "recursive:test", name="chunk-questions")
    assert all(e.reference_answer and e.expected_keywords for e in dataset)

    write_jsonl(dataset, tmp_path / "chunks.jsonl")
    first = json.loads((tmp_path / "chunks.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["outputs"]["reference_answer"] == dataset.examples[0].reference_answer
    assert first["outputs"]["expected_keywords"] == list(dataset.examples[0].expected_keywords)
    again = read_chunk_level_jsonl(tmp_path / "chunks.jsonl")
    assert again.examples == dataset.examples and again.answers_sha256 == dataset.answers_sha256

    frame = chunk_questions_to_frame(dataset, result.rejections)
    frame.to_parquet(tmp_path / "chunk_questions.parquet")
    back = chunk_questions_from_frame(pd.read_parquet(tmp_path / "chunk_questions.parquet"))
    assert back.examples == dataset.examples
    assert [e.expected_keywords for e in back] == [e.expected_keywords for e in dataset]


def test_expected_keywords_are_grounded_in_the_chunks_and_not_given_away_by_the_question() -> None:
    text = "The Kestrel pump runs at 1,450 rpm; the ALARM fires at 7.5 bar. Zoë Mbeki owns it."
    chunk = PositionAwareChunk(ChunkId("c1"), DocumentId("a.md"), 0, len(text), text)
    keywords = ["pump", "1,450 rpm", "alarm", "7.5 bar.", "Zoe Mbeki", "purple", "rpm", "1,450 RPM", "kest"]
    assert expected_keywords(keywords, "How fast does the Kestrel pump run?", [chunk]) == (
        "1,450 rpm",  # "pump" is in the question; "1,450 RPM" repeats "1,450 rpm"
        "alarm",  # case folded
        "7.5 bar.",  # edge punctuation trimmed
        "Zoe Mbeki",  # accents folded
        "rpm",  # "purple" is not in the chunk; "kest" is only part of a word
    )


def test_schema_invalid_questions_are_repaired_or_rejected(tmp_path: Path) -> None:
    chunks = chunks_of_tiny_corpus()
    dense = next(c for c in chunks if len(c.text.split()) >= 8)
    too_few_keywords = json.dumps(
        {
            "questions": [
                {
                    "question": "What is it about?",
                    "type": "FACTUAL",
                    "keywords": ["x"],
                    "source_chunks": ["A"],
                }
            ]
        }
    )
    with openai_server() as (url, script):
        script.responder = chunk_level_reply
        script.chat_contents = [
            '{"density": "LOTS"}',
            '{"density": "DENSE"}',
            too_few_keywords,
            too_few_keywords,
        ]
        model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=url)
        client = LLMClient(model, retry=RetryPolicy(max_attempts=2, base_delay_s=0.01))
        result = LLMChunkLevelGenerator(client, max_chunks=1).generate([dense])
    assert result.examples == ()
    (rejection,) = result.rejections
    assert rejection.reason == "invalid_reply" and "keywords must hold 3 to 5 keywords" in rejection.detail
    assert rejection.source_chunk_ids == (dense.chunk_id,)


def test_chunk_sampling_is_seeded() -> None:
    chunks = chunks_of_tiny_corpus()
    first = [t.chunk.chunk_id for t in sample_tasks(chunks, 4, seed=1)]
    assert first == [t.chunk.chunk_id for t in sample_tasks(list(reversed(chunks)), 4, seed=1)]
    assert first != [t.chunk.chunk_id for t in sample_tasks(chunks, 4, seed=2)]
