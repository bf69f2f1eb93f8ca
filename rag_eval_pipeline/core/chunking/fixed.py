"""Fixed-size character windows: the baseline every other chunker is compared against."""

from __future__ import annotations

from ..types import Document, PositionAwareChunk
from .base import chunks_from_spans
from .settings import check_sizes, settings_fingerprint


def window_spans(length: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows over ``range(length)``; stops once a window reaches the end, so none is redundant."""
    spans: list[tuple[int, int]] = []
    start = 0
    while start < length:
        end = min(start + size, length)
        spans.append((start, end))
        if end == length:
            break
        start += size - overlap
    return spans


class FixedSizeChunker:
    def __init__(self, chunk_size: int, chunk_overlap: int = 0, *, config_hash: str = "") -> None:
        check_sizes(chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self._fingerprint = settings_fingerprint(
            "fixed", {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "config_hash": config_hash}
        )

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        return chunks_from_spans(
            document, window_spans(len(document.text), self.chunk_size, self.chunk_overlap)
        )
