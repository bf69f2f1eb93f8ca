"""The chunker contract: cut a document and report exactly where each piece came from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ..types import Document, PositionAwareChunk, assign_chunk_ids


@runtime_checkable
class Chunker(Protocol):
    @property
    def fingerprint(self) -> str:
        """Changes whenever the chunks could change (kind and settings); chunk-level ground truth
        records it so an evaluation can refuse a different chunker."""
        ...

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        """Chunks in document order with offsets recorded while cutting, never searched for."""
        ...


def chunks_from_spans(document: Document, spans: Iterable[tuple[int, int]]) -> list[PositionAwareChunk]:
    """Turn (start, end) cut positions into chunks with ``pa_chunk_`` ids; empty spans are dropped."""
    kept = [(s, e) for s, e in spans if e > s]
    texts = [document.text[s:e] for s, e in kept]
    ids = assign_chunk_ids("pa_chunk_", document.doc_id, texts)
    return [
        PositionAwareChunk(chunk_id, document.doc_id, s, e, text)
        for chunk_id, (s, e), text in zip(ids, kept, texts, strict=True)
    ]


def chunk_corpus(chunker: Chunker, documents: Iterable[Document]) -> list[PositionAwareChunk]:
    return [chunk for doc in documents for chunk in chunker.chunk_document(doc)]
