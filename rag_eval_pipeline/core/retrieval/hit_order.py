"""The one order of retrieved chunks: best score first, ties in document order.

Identical chunks (a paragraph repeated in one document or across documents) get identical scores from
every retriever, and each engine returns such ties in its own order (Qdrant's segments, numpy's
partition, a hash). Which copy ranks first decides position-exact metrics (span recall counts the
characters of the copy the reference names), so a tie must never be left to the engine: every stage
that orders chunks (the dense stores, BM25, fusion, the reranker, the diagnostics' replays) sorts with
``hit_sort_key``. Scores are rounded first, so engines whose float sums differ in the last bits agree;
then the earlier place in the corpus wins: doc id, start offset, end offset (chunk id last, for two
chunks with the same span, which one chunk set never holds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

# Cosine similarities and BM25 scores: equal to 6 decimals is a tie (float32 engines differ beyond).
SCORE_DECIMALS = 6

T = TypeVar("T")


class Placed(Protocol):
    """Anything with a chunk's place in the corpus (chunks, scored hits, retrieved rows)."""

    @property
    def chunk_id(self) -> str: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


def document_order(chunk: Placed) -> tuple[str, int, int, str]:
    """Where a chunk is in the corpus: documents by id, then offsets (a chunk set's own order)."""
    return (chunk.doc_id, chunk.start, chunk.end, chunk.chunk_id)


def hit_sort_key(
    score: float, chunk: Placed, decimals: int = SCORE_DECIMALS
) -> tuple[float, str, int, int, str]:
    """Sort ascending by this for best first: the rounded score descending, then document order."""
    return (-round(score, decimals), *document_order(chunk))


def best_first(
    items: Iterable[T],
    score: Callable[[T], float],
    chunk: Callable[[T], Placed],
    decimals: int = SCORE_DECIMALS,
) -> list[T]:
    """``items`` best first by ``score``, ties in document order of their ``chunk``."""
    return sorted(items, key=lambda item: hit_sort_key(score(item), chunk(item), decimals))


def same_score(a: float, b: float, decimals: int = SCORE_DECIMALS) -> bool:
    """Whether two scores tie under the rounding ``hit_sort_key`` applies."""
    return round(a, decimals) == round(b, decimals)
