"""Token-level to chunk-level ground truth: overlap by >= 1 character, any chunk set."""

from __future__ import annotations

import random
import time

from rag_eval_pipeline.core.questions.ground_truth import relevant_chunk_ids
from rag_eval_pipeline.core.spans import ChunkSpanIndex
from rag_eval_pipeline.core.types import CharacterSpan, ChunkId, DocumentId, PositionAwareChunk


def span(doc: str, start: int, end: int) -> CharacterSpan:
    return CharacterSpan(DocumentId(doc), start, end, "x" * (end - start))


def chunk(name: str, doc: str, start: int, end: int) -> PositionAwareChunk:
    return PositionAwareChunk(ChunkId(name), DocumentId(doc), start, end, "x" * (end - start))


CHUNKS = [
    chunk("d3", "d", 20, 30),
    chunk("e1", "e", 0, 30),
    chunk("d1", "d", 0, 10),
    chunk("d2", "d", 10, 20),
]


def test_touching_is_not_overlapping() -> None:
    assert relevant_chunk_ids([span("d", 10, 20)], CHUNKS) == ["d2"]


def test_span_across_two_chunks_gives_both_in_document_order() -> None:
    assert relevant_chunk_ids([span("d", 25, 26), span("d", 5, 15)], CHUNKS) == ["d1", "d2", "d3"]


def test_chunks_of_another_document_are_ignored() -> None:
    assert relevant_chunk_ids([span("e", 12, 13)], CHUNKS) == ["e1"]
    assert relevant_chunk_ids([span("f", 0, 100)], CHUNKS) == []


def test_sorted_by_document_then_start_across_documents() -> None:
    index = ChunkSpanIndex(CHUNKS)
    assert relevant_chunk_ids([span("e", 0, 1), span("d", 29, 30), span("d", 0, 1)], index) == [
        "d1",
        "d3",
        "e1",
    ]


def test_overlapping_chunk_set_and_empty_span() -> None:
    windows = [chunk(f"w{s}", "d", s, s + 10) for s in range(0, 50, 5)]
    assert relevant_chunk_ids([span("d", 12, 13)], windows) == ["w5", "w10"]
    assert relevant_chunk_ids([span("d", 12, 12)], windows) == []


def test_corpus_scale_conversion_is_fast() -> None:
    rng = random.Random(0)
    chunks = [chunk(f"c{d}_{i}", f"doc{d}", i * 200, i * 200 + 250) for d in range(100) for i in range(200)]
    questions = [
        [
            span(f"doc{rng.randrange(100)}", s, s + rng.randint(1, 600))
            for s in rng.choices(range(40_000), k=2)
        ]
        for _ in range(300)
    ]
    began = time.perf_counter()
    index = ChunkSpanIndex(chunks)
    results = [relevant_chunk_ids(q, index) for q in questions]
    elapsed = time.perf_counter() - began
    assert all(results)
    assert elapsed < 5.0  # typically ~0.05 s; the bound only guards against a per-chunk scan
