"""Windows of tokens, cut on the tokenizer's own character offsets so chunks tile the original text."""

from __future__ import annotations

from bisect import bisect_right
from itertools import pairwise

from tokenizers import Tokenizer

from ..types import Document, PositionAwareChunk
from .base import chunks_from_spans
from .settings import check_sizes, settings_fingerprint
from .tokenization import HuggingFaceTokenizer, TextTokenizer, minilm_tokenizer


def token_window_spans(text: str, starts: list[int], size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of ``size`` tokens stepping ``size - overlap``, as character spans that tile ``text``.

    A span runs from its first token's start to the start of the token after its last one, so
    whitespace and characters that yield no token belong to the preceding chunk. Tokens sharing a
    start offset (WordPiece splits a Hangul syllable into jamo at one offset; cl100k_base splits some
    emoji, CJK characters and curly quotes into byte tokens) cannot be separated by a character cut,
    so windows are cut only between such groups: a window then holds fewer tokens, the overlap grows
    to the group boundary, and a group larger than ``size`` becomes one oversized window, the only
    case where the size limit cannot hold.
    """
    if not starts:
        return [(0, len(text))]
    if any(later < earlier for earlier, later in pairwise(starts)):
        raise ValueError("the tokenizer returned token offsets out of order; cannot cut on them")
    # Token indices where a new start offset begins, plus the end: the only places a cut can go.
    cuts = [i for i in range(len(starts)) if i == 0 or starts[i] != starts[i - 1]] + [len(starts)]
    spans: list[tuple[int, int]] = []
    first = 0  # index into cuts of the window's first token
    while True:
        after = _last_cut_at_most(cuts, cuts[first] + size, lower=first + 1)
        end = len(text) if cuts[after] == len(starts) else starts[cuts[after]]
        spans.append((0 if not spans else starts[cuts[first]], end))
        if cuts[after] == len(starts):
            return spans
        first = _last_cut_at_most(cuts, cuts[after] - overlap, lower=first + 1)


def _last_cut_at_most(cuts: list[int], limit: int, lower: int) -> int:
    """Largest index i >= lower with cuts[i] <= limit, else ``lower`` (an oversized group of
    same-start tokens, or no progress: advance by one group rather than stall)."""
    return max(lower, bisect_right(cuts, limit) - 1)


class TokenChunker:
    """``chunk_size`` counts tokens of the whole document's tokenization that start inside a chunk;
    the tokenizer is MiniLM's unless given (core/chunking/tokenization.py, or a ``tokenizers.Tokenizer``)."""

    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int = 0,
        tokenizer: TextTokenizer | Tokenizer | None = None,
        *,
        config_hash: str = "",
    ) -> None:
        check_sizes(chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self._tokenizer = HuggingFaceTokenizer(tokenizer) if isinstance(tokenizer, Tokenizer) else tokenizer
        self._config_hash = config_hash
        self._fingerprint: str | None = None

    @property
    def tokenizer(self) -> TextTokenizer:
        return self._tokenizer if self._tokenizer is not None else minilm_tokenizer()

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = settings_fingerprint(
                "token",
                {
                    "chunk_size": self.chunk_size,
                    "chunk_overlap": self.chunk_overlap,
                    "tokenizer": self.tokenizer.fingerprint,
                    "config_hash": self._config_hash,
                },
            )
        return self._fingerprint

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        text = document.text
        if not text:
            return []
        starts = self.tokenizer.token_starts(text)
        return chunks_from_spans(
            document, token_window_spans(text, starts, self.chunk_size, self.chunk_overlap)
        )
