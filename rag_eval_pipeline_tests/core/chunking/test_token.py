from __future__ import annotations

from itertools import pairwise

from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from rag_eval_pipeline.core.chunking import TokenChunker
from rag_eval_pipeline.core.chunking.token import token_window_spans
from rag_eval_pipeline.core.chunking.tokenization import minilm_tokenizer

from .helpers import assert_tiles, doc

TEXT = (
    "  Retrieval-augmented generation pairs a retriever with a generator. The retriever finds passages; "
    "the generator writes the answer.\n\nChunking decides what a passage is, so it matters a lot.  "
)


def tokens_starting_in(starts: list[int], start: int, end: int) -> int:
    return sum(start <= s < end for s in starts)


def test_windows_hold_chunk_size_tokens_and_step_by_size_minus_overlap() -> None:
    size, overlap = 8, 3
    document = doc(TEXT)
    chunks = TokenChunker(size, overlap).chunk_document(document)
    assert_tiles(document, chunks)
    starts = minilm_tokenizer().token_starts(TEXT)
    counts = [tokens_starting_in(starts, c.start, c.end) for c in chunks]
    assert all(count == size for count in counts[:-1])
    assert 0 < counts[-1] <= size
    # Chunk i begins at token i * (size - overlap): the tokens before it are exactly that many.
    assert [sum(s < c.start for s in starts) for c in chunks[1:]] == [
        i * (size - overlap) for i in range(1, len(chunks))
    ]


def test_without_overlap_chunks_meet_at_the_next_token_start() -> None:
    document = doc(TEXT)
    chunks = TokenChunker(10).chunk_document(document)
    assert_tiles(document, chunks)
    starts = set(minilm_tokenizer().token_starts(TEXT))
    assert all(prev.end == nxt.start and nxt.start in starts for prev, nxt in pairwise(chunks))
    assert chunks[0].text.startswith("  ") and chunks[-1].text.endswith("lot.  ")


def test_text_without_tokens_is_one_chunk() -> None:
    chunks = TokenChunker(4).chunk_document(doc(" \n\t\x00 "))
    assert [(c.start, c.end) for c in chunks] == [(0, 5)]
    assert TokenChunker(4).chunk_document(doc("")) == []


def test_tokens_sharing_a_start_are_never_split_apart() -> None:
    starts = [0, 2, 2, 2, 5, 7]
    assert token_window_spans("x" * 9, starts, 2, 0) == [(0, 2), (2, 5), (5, 9)]
    # The overlap of one token widens to the whole group at offset 2.
    assert token_window_spans("x" * 9, starts, 4, 1) == [(0, 5), (2, 7), (5, 9)]
    # A group larger than the window cannot be cut: it becomes one oversized chunk.
    assert token_window_spans("x" * 9, starts, 1, 0) == [(0, 2), (2, 5), (5, 7), (7, 9)]


def test_hangul_syllables_split_into_jamo_stay_whole() -> None:
    text = "한국어 텍스트"  # each syllable is 2-3 WordPiece tokens at the same offset
    document = doc(text)
    chunks = TokenChunker(4).chunk_document(document)
    assert_tiles(document, chunks)
    starts = minilm_tokenizer().token_starts(text)
    assert all(tokens_starting_in(starts, c.start, c.end) <= 4 for c in chunks)
    assert [c.text for c in chunks] == ["한", "국", "어 ", "텍", "스트"]


def test_custom_tokenizer_is_used_and_changes_the_fingerprint() -> None:
    vocab = {"[UNK]": 0, "one": 1, "two": 2, "three": 3}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    chunker = TokenChunker(2, 0, tokenizer)
    chunks = chunker.chunk_document(doc("one two three four five"))
    assert [c.text for c in chunks] == ["one two ", "three four ", "five"]
    assert chunker.fingerprint != TokenChunker(2, 0).fingerprint
    assert TokenChunker(2, 0).fingerprint == TokenChunker(2, 0).fingerprint
