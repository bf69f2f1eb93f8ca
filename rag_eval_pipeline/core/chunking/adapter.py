"""Give third-party chunkers, which return bare strings, the positions the evaluation needs.

This is the one place a chunk is located by searching for its text. The search walks left to right
from just after the previous chunk's start, so a repeated passage maps to its own copy rather than
to the first one, and overlapping chunks are still found.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

from ..types import Document, PositionAwareChunk
from .base import chunks_from_spans

logger = logging.getLogger(__name__)

ChunkFn = Callable[[str], Sequence[Any]]


def _as_chunk_fn(chunker: object) -> ChunkFn:
    for method in ("chunk", "split_text"):
        bound = getattr(chunker, method, None)
        if callable(bound):
            return cast(ChunkFn, bound)
    if callable(chunker):
        return chunker
    raise TypeError(
        f"{type(chunker).__name__} is not a chunker: pass a function text -> list[str], or an object "
        f"with a .chunk(text) or .split_text(text) method"
    )


def _chunk_text(item: object) -> str:
    """Strings, or chunk objects carrying ``.text`` (as some libraries return)."""
    text = item if isinstance(item, str) else getattr(item, "text", None)
    if not isinstance(text, str):
        raise TypeError(f"a chunker returned {type(item).__name__}, expected str or an object with .text")
    return text


class ChunkerPositionAdapter:
    """Chunk strings not found verbatim (e.g. a chunker that rewrites whitespace) are skipped with a
    warning and counted: ``unlocated_count`` over the adapter's life, ``last_unlocated_count`` for
    the latest document."""

    def __init__(self, chunk_fn: ChunkFn | object, name: str) -> None:
        self._chunk_fn = _as_chunk_fn(chunk_fn)
        self.name = name
        self.unlocated_count = 0
        self.last_unlocated_count = 0

    @property
    def fingerprint(self) -> str:
        return "adapter:" + self.name

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        spans, unlocated = locate_chunks(document, [_chunk_text(c) for c in self._chunk_fn(document.text)])
        self.last_unlocated_count = len(unlocated)
        self.unlocated_count += len(unlocated)
        for index, text in unlocated:
            message = (
                f"chunker {self.name!r}: chunk #{index} of document {document.doc_id!r} "
                f"({text[:40]!r}...) does not occur in the text after the previous chunk; skipped"
            )
            warnings.warn(message, stacklevel=2)
            logger.warning(message)
        return chunks_from_spans(document, spans)


def locate_chunks(
    document: Document, texts: Sequence[str]
) -> tuple[list[tuple[int, int]], list[tuple[int, str]]]:
    """Spans of the located chunks, and (index, text) of those that could not be located.

    Empty strings carry no text and are dropped without counting.
    """
    spans: list[tuple[int, int]] = []
    unlocated: list[tuple[int, str]] = []
    cursor = 0
    for index, text in enumerate(texts):
        if not text:
            continue
        start = document.text.find(text, cursor)
        if start == -1:
            unlocated.append((index, text))
            continue
        spans.append((start, start + len(text)))
        cursor = start + 1
    return spans, unlocated
