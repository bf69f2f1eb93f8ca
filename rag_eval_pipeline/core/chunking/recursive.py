"""LangChain-style recursive splitting done on offsets, so chunks keep their exact place in the text.

Unlike LangChain, nothing is stripped and each separator stays on the end of the piece before it: the
pieces tile the text, so a merged chunk is just (first piece start, last piece end).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from ..configs import DEFAULT_SEPARATORS
from ..types import Document, PositionAwareChunk
from .base import chunks_from_spans
from .settings import check_sizes, settings_fingerprint

Span = tuple[int, int]


def _normalise_separators(separators: Sequence[str]) -> tuple[str, ...]:
    """End the list at "" (splitting into characters), adding it if missing, so every piece can fit."""
    kept: list[str] = []
    for separator in separators:
        kept.append(separator)
        if separator == "":
            break
    else:
        kept.append("")
    return tuple(kept)


def _pieces(text: str, start: int, end: int, separator: str) -> list[Span]:
    if separator == "":
        return [(i, i + 1) for i in range(start, end)]
    pieces: list[Span] = []
    cursor = start
    while (found := text.find(separator, cursor, end)) != -1:
        cut = found + len(separator)
        pieces.append((cursor, cut))
        cursor = cut
    if cursor < end:
        pieces.append((cursor, end))
    return pieces


class RecursiveCharacterChunker:
    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int = 0,
        separators: Sequence[str] = DEFAULT_SEPARATORS,
        *,
        config_hash: str = "",
    ) -> None:
        check_sizes(chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.separators = _normalise_separators(separators)
        self._fingerprint = settings_fingerprint(
            "recursive",
            {
                "chunk_size": chunk_size,
                "chunk_overlap": chunk_overlap,
                "separators": list(self.separators),
                "config_hash": config_hash,
            },
        )

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        return chunks_from_spans(document, self.split_spans(document.text, 0, len(document.text)))

    def split_spans(self, text: str, start: int, end: int) -> list[Span]:
        """Chunk spans covering ``text[start:end]``; lets other chunkers re-cut part of a document."""
        return self._split(text, start, end, self.separators)

    def _split(self, text: str, start: int, end: int, separators: tuple[str, ...]) -> list[Span]:
        index = next(i for i, sep in enumerate(separators) if sep == "" or text.find(sep, start, end) != -1)
        separator, finer = separators[index], separators[index + 1 :]
        chunks: list[Span] = []
        fitting: list[Span] = []
        for piece in _pieces(text, start, end, separator):
            if piece[1] - piece[0] <= self.chunk_size:
                fitting.append(piece)
                continue
            # A piece too long for one chunk is cut on finer separators; like LangChain, chunks never
            # span the boundary between it and its neighbours.
            chunks.extend(self._merge(fitting))
            fitting = []
            chunks.extend(self._split(text, piece[0], piece[1], finer))
        chunks.extend(self._merge(fitting))
        return chunks

    def _merge(self, pieces: list[Span]) -> list[Span]:
        """Greedy merge up to chunk_size; the next chunk restarts on whole trailing pieces <= overlap."""
        chunks: list[Span] = []
        current: deque[Span] = deque()
        total = 0
        for piece in pieces:
            length = piece[1] - piece[0]
            if current and total + length > self.chunk_size:
                chunks.append((current[0][0], current[-1][1]))
                # Always drops at least one piece (total + length > chunk_size), so starts advance.
                while current and (total > self.chunk_overlap or total + length > self.chunk_size):
                    dropped = current.popleft()
                    total -= dropped[1] - dropped[0]
            current.append(piece)
            total += length
        if current:
            chunks.append((current[0][0], current[-1][1]))
        return chunks
