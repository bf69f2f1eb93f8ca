"""Interval arithmetic checked against per-character sets and brute-force overlap search."""

from __future__ import annotations

import random

import pytest

from rag_eval_pipeline.core.spans import ChunkSpanIndex, intersection_length, merge_intervals, total_length
from rag_eval_pipeline.core.types import CharacterSpan, ChunkId, DocumentId, PositionAwareChunk


def span(doc: str, start: int, end: int) -> CharacterSpan:
    return CharacterSpan(DocumentId(doc), start, end, "x" * (end - start))


def chunk(name: str, doc: str, start: int, end: int) -> PositionAwareChunk:
    return PositionAwareChunk(ChunkId(name), DocumentId(doc), start, end, "x" * (end - start))


def test_merge_joins_overlapping_touching_and_duplicated_and_drops_empty() -> None:
    spans = [span("b", 5, 9), span("a", 10, 20), span("a", 0, 5), span("a", 5, 8), span("a", 3, 4)]
    spans += [span("a", 30, 30), span("a", 25, 28), span("a", 25, 28), span("c", 7, 7)]
    merged = merge_intervals(spans)
    assert merged == {"a": [(0, 8), (10, 20), (25, 28)], "b": [(5, 9)]}
    assert list(merged) == ["a", "b"]
    assert total_length(merged) == 8 + 10 + 3 + 4


def test_merge_rejects_inverted_span() -> None:
    class Bad:
        doc_id = DocumentId("a")
        start = 5
        end = 2

    with pytest.raises(ValueError, match="start <= end"):
        merge_intervals([Bad()])


def test_intersection_length_matches_character_sets() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = [span(rng.choice("ab"), s, s + rng.randint(0, 9)) for s in rng.choices(range(40), k=5)]
        b = [span(rng.choice("ab"), s, s + rng.randint(0, 9)) for s in rng.choices(range(40), k=5)]
        chars_a = {(x.doc_id, i) for x in a for i in range(x.start, x.end)}
        chars_b = {(x.doc_id, i) for x in b for i in range(x.start, x.end)}
        merged_a, merged_b = merge_intervals(a), merge_intervals(b)
        assert total_length(merged_a) == len(chars_a)
        assert intersection_length(merged_a, merged_b) == len(chars_a & chars_b)
        assert intersection_length(merged_b, merged_a) == len(chars_a & chars_b)


def test_index_matches_brute_force_with_overlapping_chunks_of_mixed_length() -> None:
    rng = random.Random(3)
    chunks = []
    for i in range(2000):
        start = rng.randrange(5000)
        length = rng.choice([0, 1, 5, 50, 400]) if i % 97 else 3000  # a few giant chunks
        chunks.append(chunk(f"c{i}", rng.choice("abc"), start, start + length))
    index = ChunkSpanIndex(chunks)
    for _ in range(100):
        start = rng.randrange(5200)
        query = [span(rng.choice("abcd"), start, start + rng.randint(0, 60))]
        q = query[0]
        # Shares a character: the overlap [max start, min end) is non-empty. (CharacterSpan.overlaps
        # would call an empty chunk strictly inside the query overlapping.)
        shared = [c for c in chunks if c.doc_id == q.doc_id and max(c.start, q.start) < min(c.end, q.end)]
        expected = sorted(shared, key=lambda c: (c.doc_id, c.start, c.end, c.chunk_id))
        assert index.overlapping(query) == expected


def test_index_reports_each_chunk_once_across_query_spans() -> None:
    index = ChunkSpanIndex([chunk("x", "a", 0, 10), chunk("y", "a", 10, 20)])
    found = index.overlapping([span("a", 2, 4), span("a", 5, 12), span("a", 2, 4)])
    assert [c.chunk_id for c in found] == ["x", "y"]
    assert index.overlapping([span("a", 10, 10)]) == []
    assert len(index) == 2


def test_touching_matches_brute_force_closed_interval_meets() -> None:
    rng = random.Random(5)
    chunks = []
    for i in range(600):
        start = rng.randrange(500)
        chunks.append(chunk(f"c{i}", rng.choice("ab"), start, start + rng.choice([0, 1, 5, 20, 120])))
    index = ChunkSpanIndex(chunks)
    for _ in range(200):
        start = rng.randrange(520)
        q = span(rng.choice("abc"), start, start + rng.choice([0, 0, 1, 7, 40]))
        # Chroma's intersect_two_ranges: max start <= min end (a touch, or an empty span inside, meets);
        # an empty chunk holds no character and is not indexed
        met = [
            c
            for c in chunks
            if c.doc_id == q.doc_id and c.end > c.start and max(c.start, q.start) <= min(c.end, q.end)
        ]
        assert index.touching([q]) == sorted(met, key=lambda c: (c.doc_id, c.start, c.end, c.chunk_id))
    index = ChunkSpanIndex([chunk("x", "a", 0, 10), chunk("y", "a", 10, 20), chunk("z", "a", 21, 30)])
    assert [c.chunk_id for c in index.touching([span("a", 10, 10)])] == ["x", "y"]
    assert [c.chunk_id for c in index.touching([span("a", 20, 21)])] == ["y", "z"]
    assert index.overlapping([span("a", 20, 21)]) == []
