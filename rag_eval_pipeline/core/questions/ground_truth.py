"""Token-level ground truth turned into chunk-level ground truth for any chunk set.

Character spans are the chunker-independent truth; chunk IDs are derived from them per chunk set, so
every chunking strategy is judged against the same reference.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..spans import ChunkSpanIndex, ChunkT, SpanLike
from ..types import ChunkId

__all__ = ["relevant_chunk_ids"]


def relevant_chunk_ids(
    spans: Iterable[SpanLike], chunks: ChunkSpanIndex[ChunkT] | Iterable[ChunkT]
) -> list[ChunkId]:
    """IDs of chunks sharing >= 1 character with any span (touching is not overlapping), sorted by
    (doc_id, start). Pass a prebuilt ``ChunkSpanIndex`` when converting many questions."""
    index = chunks if isinstance(chunks, ChunkSpanIndex) else ChunkSpanIndex(chunks)
    return [chunk.chunk_id for chunk in index.overlapping(spans)]
