"""Invariants every built-in chunker keeps on arbitrary text and settings."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.chunking import (
    FixedSizeChunker,
    RecursiveCharacterChunker,
    SemanticChunker,
    TokenChunker,
)
from rag_eval_pipeline.core.chunking.tokenization import minilm_tokenizer

from .helpers import HashedBagOfWords, assert_tiles, doc
from .strategies import separators, size_and_overlap, texts

fast = settings(max_examples=150, deadline=None)


@fast
@given(texts, size_and_overlap())
def test_fixed_chunks_tile_and_respect_size(text: str, sizes: tuple[int, int]) -> None:
    chunker = FixedSizeChunker(*sizes)
    document = doc(text)
    chunks = chunker.chunk_document(document)
    assert_tiles(document, chunks)
    size, overlap = sizes
    assert all(len(c.text) <= size for c in chunks)
    assert all(c.start % (size - overlap) == 0 for c in chunks), "windows step size - overlap"
    for prev, nxt in pairwise(chunks):
        assert not (nxt.end <= prev.end), "a window inside the previous one is redundant"
    assert chunks == FixedSizeChunker(*sizes).chunk_document(document)


@fast
@given(texts, size_and_overlap(), separators)
def test_recursive_chunks_tile_and_respect_size(
    text: str, sizes: tuple[int, int], seps: tuple[str, ...]
) -> None:
    size, overlap = sizes
    chunker = RecursiveCharacterChunker(size, overlap, seps)
    document = doc(text)
    chunks = chunker.chunk_document(document)
    assert_tiles(document, chunks)
    assert all(len(c.text) <= size for c in chunks)
    for prev, nxt in pairwise(chunks):
        assert prev.end - nxt.start <= overlap
        assert nxt.end > prev.end
    assert chunks == RecursiveCharacterChunker(size, overlap, seps).chunk_document(document)


@fast
@given(texts, size_and_overlap(max_size=12))
def test_token_chunks_tile_and_respect_token_budget(text: str, sizes: tuple[int, int]) -> None:
    size, overlap = sizes
    document = doc(text)
    chunks = TokenChunker(size, overlap).chunk_document(document)
    assert_tiles(document, chunks)
    starts = minilm_tokenizer().token_starts(text)
    for chunk in chunks:
        inside = [s for s in starts if chunk.start <= s < chunk.end]
        # Over budget only when one character alone yields more tokens than fit (e.g. Hangul jamo).
        assert len(inside) <= size or len(set(inside)) == 1
    assert chunks == TokenChunker(size, overlap).chunk_document(document)


@fast
@given(texts, st.integers(1, 80), st.floats(1, 99))
def test_semantic_chunks_tile_without_overlap(text: str, max_size: int, percentile: float) -> None:
    embedder = HashedBagOfWords()
    document = doc(text)
    chunks = SemanticChunker(embedder, max_size, percentile).chunk_document(document)
    assert_tiles(document, chunks)
    assert all(len(c.text) <= max_size for c in chunks)
    assert all(prev.end <= nxt.start for prev, nxt in pairwise(chunks))  # gaps: whitespace dropped
    assert embedder.calls <= 1, "one batched embed call per document"
    assert chunks == SemanticChunker(HashedBagOfWords(), max_size, percentile).chunk_document(document)
