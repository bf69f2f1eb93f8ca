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
    """Offsets are exact, chunks are ordered, cover the whole text and carry unique ids."""
    text = document.text
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.doc_id == document.doc_id
        assert chunk.end > chunk.start
    if not text:
        assert chunks == []
        return
    assert chunks, "a non-empty text needs at least one chunk"
    assert chunks[0].start == 0
    assert chunks[-1].end == len(text)
    for prev, nxt in pairwise(chunks):
        assert prev.start < nxt.start, "starts must strictly increase"
        assert nxt.start <= prev.end, f"gap between {prev.end} and {nxt.start}"
    assert len({c.chunk_id for c in chunks}) == len(chunks)


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
