"""What retrieval needs from a vector store: one collection per (chunk config, embedder)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..embedding.base import Vectors
from ..types import ChunkId, DocumentId, PositionAwareChunk


@dataclass(frozen=True)
class ScoredChunk:
    chunk_id: ChunkId
    doc_id: DocumentId
    start: int
    end: int
    score: float
    text: str


@runtime_checkable
class VectorStore(Protocol):
    @property
    def location(self) -> str:
        """Where the collections are (a folder, a server's URL): with a name, one collection."""
        ...

    def replace_collection(
        self,
        name: str,
        chunks: Sequence[PositionAwareChunk],
        vectors: Vectors,
        chunk_config: str,
        fingerprint: str = "",
    ) -> int:
        """Make the collection hold exactly these chunks (payload: doc_id, start, end, chunk_id,
        chunk_config, text), and keep ``fingerprint`` (what the points were made from) with it once
        every point is written. A collection of the same dimension is updated in place: only points
        that are new or changed are written, those of chunks no longer there deleted. Returns the
        number of points written."""
        ...

    def fingerprint(self, name: str) -> str | None:
        """The fingerprint the collection was completed with; None when there is no collection, or it
        was written without one or not to the end."""
        ...

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        """Top ``k`` by cosine similarity for each query row, best first, ties in document order
        (core/retrieval/hit_order.py)."""
        ...

    def count(self, name: str) -> int: ...

    def session(self, name: str) -> AbstractContextManager[None]:
        """Hold the collection open across the calls made inside the block."""
        ...

    def collection_exists(self, name: str) -> bool: ...


def collection_name(chunk_config: str, embedder_model_id: str) -> str:
    """``rag_eval__<chunk config>__<embedder>``, restricted to characters every backend accepts."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", embedder_model_id).strip("-")
    return f"rag_eval__{chunk_config}__{slug}"
