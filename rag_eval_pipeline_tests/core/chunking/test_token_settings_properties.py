"""Invariants of the token settings (``tokenizer``, recursive ``length: tokens``) on arbitrary text,
for MiniLM's WordPiece and cl100k_base alike, and the token chunker against tiktoken's own windows."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker, TokenChunker
from rag_eval_pipeline.core.chunking.tokenization import TextTokenizer, cl100k_tokenizer, minilm_tokenizer

from .helpers import assert_tiles, doc
from .strategies import separators, size_and_overlap, token_texts

fast = settings(max_examples=150, deadline=None)
TOKENIZERS: dict[str, Callable[[], TextTokenizer]] = {
    "minilm": minilm_tokenizer,
    "cl100k_base": cl100k_tokenizer,
}
PUBLISHED_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")
PROSE = (
    "Chunking decides what a passage is.  It matters “a lot”: retrieval can only return what a chunk "
    "holds.\n\nA second paragraph follows,\twith tabs, numbers like 1234567 and 3.14, and an ellipsis… "
    "The café’s menu lists naïve dishes.\n\n\n   Indented text after blank lines.\nOne more line!\n"
) * 12


@pytest.mark.parametrize("name", list(TOKENIZERS))
@fast
@given(text=token_texts, sizes=size_and_overlap(max_size=12))
def test_token_windows_tile_and_hold_at_most_chunk_size_tokens(
    name: str, text: str, sizes: tuple[int, int]
) -> None:
    size, overlap = sizes
    tokenizer = TOKENIZERS[name]()
    document = doc(text)
    chunks = TokenChunker(size, overlap, tokenizer).chunk_document(document)
    assert_tiles(document, chunks)
    starts = tokenizer.token_starts(text)
    inside = [[i for i, s in enumerate(starts) if c.start <= s < c.end] for c in chunks]
    for chunk, tokens in zip(chunks[1:], inside[1:], strict=True):
        assert starts[tokens[0]] == chunk.start, "a chunk after the first starts at a token"
    for tokens in inside:
        # Over budget only when one character alone yields more tokens than fit (same-start group).
        assert len(tokens) <= size or len({starts[i] for i in tokens}) == 1
    if overlap == 0:  # a gap is a whitespace-only window, dropped (assert_tiles checks it is whitespace)
        assert all(prev.end <= nxt.start for prev, nxt in pairwise(chunks))
    if len(set(starts)) == len(starts):  # no character split into several tokens: exact windows
        assert all(len(tokens) == size for tokens in inside[:-1])
        neighbours = [(a, b) for a, b in pairwise(inside) if b[0] - a[0] == size - overlap]
        assert all(a[-1] - b[0] + 1 == overlap for a, b in neighbours if overlap)
        assert all((b[0] - a[0]) % (size - overlap) == 0 for a, b in pairwise(inside))
    assert chunks == TokenChunker(size, overlap, tokenizer).chunk_document(document)


def splits_a_character(text: str) -> bool:
    """Whether some token of ``text`` holds part of a multi-byte character (its bytes are not UTF-8)."""
    encoding = cl100k_tokenizer().encoding
    pieces = [encoding.decode_single_token_bytes(t) for t in encoding.encode_ordinary(text)]
    return b"".join(pieces).decode() != "".join(p.decode(errors="replace") for p in pieces)


def chroma_token_windows(text: str, size: int, overlap: int) -> list[str]:
    """Chroma's FixedTokenChunker (LangChain's split_text_on_tokens): decode windows of token ids, less
    the windows of whitespace only, which the project's chunkers drop (core/chunking/base.py)."""
    encoding = cl100k_tokenizer().encoding
    ids = encoding.encode_ordinary(text)
    windows, start = [], 0
    while start < len(ids):
        windows.append(encoding.decode(ids[start : start + size]))
        if start + size >= len(ids):
            break
        start += size - overlap
    return [window for window in windows if not window.isspace()]


@fast
@given(text=token_texts, sizes=size_and_overlap(max_size=12))
def test_cl100k_windows_are_the_decoded_token_windows(text: str, sizes: tuple[int, int]) -> None:
    assume(not splits_a_character(text))  # such a character is never cut, so it cannot match
    chunks = TokenChunker(*sizes, cl100k_tokenizer()).chunk_document(doc(text))
    assert [c.text for c in chunks] == chroma_token_windows(text, *sizes)


@pytest.mark.parametrize(("size", "overlap"), [(200, 0), (250, 0), (250, 125), (7, 3)])
def test_cl100k_windows_of_prose_are_the_decoded_token_windows(size: int, overlap: int) -> None:
    chunks = TokenChunker(size, overlap, cl100k_tokenizer()).chunk_document(doc(PROSE))
    assert len(chunks) > 3 and not splits_a_character(PROSE)
    assert [c.text for c in chunks] == chroma_token_windows(PROSE, size, overlap)


@pytest.mark.parametrize("name", list(TOKENIZERS))
@fast
@given(
    text=token_texts,
    sizes=size_and_overlap(max_size=30),
    seps=st.one_of(separators, st.just(PUBLISHED_SEPARATORS)),
)
def test_recursive_by_tokens_tiles_and_never_exceeds_chunk_size_tokens(
    name: str, text: str, sizes: tuple[int, int], seps: tuple[str, ...]
) -> None:
    size, overlap = sizes
    tokenizer = TOKENIZERS[name]()
    chunker = RecursiveCharacterChunker(size, overlap, seps, tokenizer=tokenizer)
    document = doc(text)
    chunks = chunker.chunk_document(document)
    assert_tiles(document, chunks)
    counts = tokenizer.count_tokens([c.text for c in chunks])
    # Over budget only for a single character that alone counts more tokens than fit.
    assert all(count <= size or len(c.text) == 1 for c, count in zip(chunks, counts, strict=True))
    if max(tokenizer.count_tokens(list(text)), default=0) <= size:
        assert max(counts, default=0) <= size
    for prev, nxt in pairwise(chunks):
        assert nxt.end > prev.end
        if overlap == 0:
            assert prev.end <= nxt.start  # a gap: whitespace only (assert_tiles)
        elif nxt.start < prev.end:
            (shared,) = tokenizer.count_tokens([text[nxt.start : prev.end]])
            assert shared <= overlap
    assert chunks == RecursiveCharacterChunker(size, overlap, seps, tokenizer=tokenizer).chunk_document(
        document
    )
