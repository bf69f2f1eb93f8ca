"""LangChain-style recursive splitting done on offsets, so chunks keep their exact place in the text.

Unlike LangChain, nothing is stripped and each separator stays on the end of the piece before it: the
pieces tile the text, so a merged chunk is just (first piece start, last piece end). A chunk of
whitespace only is dropped (as LangChain's stripping drops it), by ``chunks_from_spans``.

A piece's length is its characters, or, given a tokenizer, its tokens (LangChain's
``from_tiktoken_encoder``): pieces are measured one by one and their lengths summed, as LangChain and
Chroma's recursive chunker do. A BPE tokenizer can count a joined text higher than its pieces apart
(a merge across the cut), so a merged chunk is also counted whole and shortened by trailing pieces
until it fits: every chunk of more than one piece holds at most ``chunk_size`` tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..settings.configs import DEFAULT_SEPARATORS
from ..types import Document, PositionAwareChunk
from .base import chunks_from_spans
from .settings import check_sizes, settings_fingerprint
from .tokenization import TextTokenizer

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
    """``chunk_size`` and ``chunk_overlap`` count characters, or tokens of ``tokenizer`` when given."""

    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int = 0,
        separators: Sequence[str] = DEFAULT_SEPARATORS,
        *,
        tokenizer: TextTokenizer | None = None,
        config_hash: str = "",
    ) -> None:
        check_sizes(chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.separators = _normalise_separators(separators)
        self.tokenizer = tokenizer
        settings: dict[str, object] = {
            "chunk_size": chunk_size,
            "chunk_overlap": chunk_overlap,
            "separators": list(self.separators),
            "config_hash": config_hash,
        }
        if tokenizer is not None:  # characters leave the settings as they were before tokens existed
            settings |= {"length": "tokens", "tokenizer": tokenizer.fingerprint}
        self._fingerprint = settings_fingerprint("recursive", settings)

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        return chunks_from_spans(document, self.split_spans(document.text, 0, len(document.text)))

    def split_spans(self, text: str, start: int, end: int) -> list[Span]:
        """Chunk spans covering ``text[start:end]``; lets other chunkers re-cut part of a document."""
        return self._split(text, start, end, self.separators)

    def _lengths(self, text: str, pieces: list[Span]) -> list[int]:
        if self.tokenizer is None:
            return [end - start for start, end in pieces]
        return self.tokenizer.count_tokens([text[start:end] for start, end in pieces])

    def _measure(self, text: str, start: int, end: int) -> int:
        """The length of ``text[start:end]`` taken whole."""
        if self.tokenizer is None:
            return end - start
        return self.tokenizer.count_tokens([text[start:end]])[0]

    def _split(self, text: str, start: int, end: int, separators: tuple[str, ...]) -> list[Span]:
        index = next(i for i, sep in enumerate(separators) if sep == "" or text.find(sep, start, end) != -1)
        separator, finer = separators[index], separators[index + 1 :]
        chunks: list[Span] = []
        fitting: list[Span] = []
        lengths: list[int] = []
        pieces = _pieces(text, start, end, separator)
        for piece, length in zip(pieces, self._lengths(text, pieces), strict=True):
            # A single character is never cut, even when it counts more tokens than fit.
            if length <= self.chunk_size or separator == "":
                fitting.append(piece)
                lengths.append(length)
                continue
            # A piece too long for one chunk is cut on finer separators; like LangChain, chunks never
            # span the boundary between it and its neighbours.
            chunks.extend(self._merge(text, fitting, lengths))
            fitting, lengths = [], []
            chunks.extend(self._split(text, piece[0], piece[1], finer))
        chunks.extend(self._merge(text, fitting, lengths))
        return chunks

    def _merge(self, text: str, pieces: list[Span], lengths: list[int]) -> list[Span]:
        """Greedy merge up to chunk_size; the next chunk restarts on whole trailing pieces <= overlap."""
        chunks: list[Span] = []
        first = 0
        while first < len(pieces):
            end, total = first + 1, lengths[first]
            while end < len(pieces) and total + lengths[end] <= self.chunk_size:
                total += lengths[end]
                end += 1
            while (
                end - first > 1
                and self._measure(text, pieces[first][0], pieces[end - 1][1]) > self.chunk_size
            ):
                end -= 1  # counted whole, the pieces hold more tokens than their sum (see above)
            chunks.append((pieces[first][0], pieces[end - 1][1]))
            if end == len(pieces):
                break
            first = self._restart(text, pieces, lengths, first, end)
        return chunks

    def _restart(self, text: str, pieces: list[Span], lengths: list[int], first: int, end: int) -> int:
        """Where the chunk after pieces[first:end] starts: the longest run of its trailing pieces within
        chunk_overlap that leaves room for pieces[end], never its first piece (so starts advance)."""
        if self.chunk_overlap == 0:  # pieces of no tokens (whitespace for WordPiece) fit "overlap 0"
            return end
        restart, total = end, 0
        while restart - 1 > first:
            candidate = total + lengths[restart - 1]
            if candidate > self.chunk_overlap or candidate + lengths[end] > self.chunk_size:
                break
            if self.tokenizer is not None and (
                self._measure(text, pieces[restart - 1][0], pieces[end - 1][1]) > self.chunk_overlap
                or self._measure(text, pieces[restart - 1][0], pieces[end][1]) > self.chunk_size
            ):
                break
            restart, total = restart - 1, candidate
        return restart
