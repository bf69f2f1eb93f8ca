"""Shared checks and fakes for the chunker tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from rag_eval_pipeline.core.embedding.base import Vectors
from rag_eval_pipeline.core.types import Document, DocumentId, PositionAwareChunk


def doc(text: str, doc_id: str = "doc") -> Document:
    return Document(DocumentId(doc_id), text)


def assert_tiles(document: Document, chunks: list[PositionAwareChunk]) -> None:
    """Offsets are exact, chunks are ordered, carry unique ids and text (no chunk is whitespace only),
    and cover the whole text but for whitespace that no chunk needed."""
    text = document.text
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.doc_id == document.doc_id
        assert chunk.end > chunk.start
        assert not chunk.text.isspace(), f"whitespace-only chunk {chunk.text!r} at {chunk.start}"
    if not text.strip():
        assert chunks == []
        return
    assert chunks, "a text with non-whitespace characters needs at least one chunk"
    for prev, nxt in pairwise(chunks):
        assert prev.start < nxt.start, "starts must strictly increase"
    assert_uncovered_is_whitespace(text, chunks)
    assert len({c.chunk_id for c in chunks}) == len(chunks)


def assert_uncovered_is_whitespace(text: str, chunks: list[PositionAwareChunk]) -> None:
    covered = [False] * len(text)
    for chunk in chunks:
        covered[chunk.start : chunk.end] = [True] * (chunk.end - chunk.start)
    uncovered = "".join(ch for ch, inside in zip(text, covered, strict=True) if not inside)
    assert not uncovered or uncovered.isspace(), f"characters in no chunk: {uncovered!r}"


class HashedBagOfWords:
    """Cheap deterministic embedder: hashed word counts, L2-normalised (zero for texts without words)."""

    def __init__(self, dimension: int = 64) -> None:
        self._dimension = dimension
        self.calls = 0

    @property
    def model_id(self) -> str:
        return f"test-hashed-bow-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        vectors = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                vectors[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % self._dimension] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
