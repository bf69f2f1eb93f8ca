from __future__ import annotations

from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker
from rag_eval_pipeline.core.chunking.tokenization import cl100k_tokenizer, minilm_tokenizer

from .helpers import assert_tiles, doc


def texts(chunker: RecursiveCharacterChunker, text: str) -> list[str]:
    chunks = chunker.chunk_document(doc(text))
    assert_tiles(doc(text), chunks)
    return [c.text for c in chunks]


def test_prefers_paragraph_breaks() -> None:
    text = "First paragraph is here.\n\nSecond one. It has two sentences."
    assert texts(RecursiveCharacterChunker(40, 0), text) == [
        "First paragraph is here.\n\n",
        "Second one. It has two sentences.",
    ]


def test_long_paragraph_is_cut_on_sentences_then_words() -> None:
    text = "Short para.\n\nAlpha beta gamma. Delta epsilon zeta eta theta."
    assert texts(RecursiveCharacterChunker(20, 0), text) == [
        "Short para.\n\n",
        "Alpha beta gamma. ",
        "Delta epsilon zeta ",
        "eta theta.",
    ]


def test_overlap_is_made_of_whole_trailing_pieces() -> None:
    assert texts(RecursiveCharacterChunker(9, 3, (" ",)), "aa bb cc dd ee") == ["aa bb cc ", "cc dd ee"]


def test_text_without_separators_falls_back_to_characters() -> None:
    assert texts(RecursiveCharacterChunker(4, 0, ("\n\n",)), "abcdefghij") == ["abcd", "efgh", "ij"]


def test_separators_and_whitespace_stay_in_chunks_but_no_chunk_is_whitespace_only() -> None:
    text = "\n\n  lead\n\n\n\ntrail  \n"
    # The cut before was '\n\n', '  ', 'lead\n', '\n', '\n\n', 'trail ', ' \n'.
    assert texts(RecursiveCharacterChunker(6, 0), text) == ["lead\n", "trail "]


def by_tokens(size: int, overlap: int, separators: tuple[str, ...]) -> RecursiveCharacterChunker:
    return RecursiveCharacterChunker(size, overlap, separators, tokenizer=cl100k_tokenizer())


def test_by_tokens_piece_lengths_are_summed_as_langchain_does() -> None:
    # "hello " is 2 tokens and "world" 1 apart, though "hello world" is 2 tokens whole
    assert cl100k_tokenizer().count_tokens(["hello ", "world", "hello world"]) == [2, 1, 2]
    assert texts(by_tokens(2, 0, (" ",)), "hello world") == ["hello ", "world"]
    assert texts(by_tokens(3, 0, (" ",)), "hello world") == ["hello world"]
    assert texts(by_tokens(5, 2, (" ",)), "one two three four") == ["one two ", "two three four"]


def test_by_tokens_a_merge_that_counts_more_whole_is_shortened() -> None:
    # "?!" and "'s" are one token each, "?!'s" three: BPE merges across the cut
    assert cl100k_tokenizer().count_tokens(["?!", "'s", "?!'s"]) == [1, 1, 3]
    assert texts(by_tokens(2, 0, ("!", "")), "?!'s") == ["?!", "'s"]


def test_by_tokens_the_overlap_is_counted_whole() -> None:
    # Summed, the trailing pieces "?!" + "'s!" fit an overlap of 3; whole they count more.
    question, quote, whole, kept = cl100k_tokenizer().count_tokens(["?!", "'s!", "?!'s!", "'s!"])
    assert question + quote <= 3 < whole and kept <= 3
    assert texts(by_tokens(5, 3, ("!", "")), "!?!'s!a!") == ["!?!'s!", "'s!a!"]


def test_by_tokens_a_character_of_more_tokens_than_fit_is_a_chunk_alone() -> None:
    assert cl100k_tokenizer().count_tokens(["😀"]) == [2]
    assert texts(by_tokens(1, 0, ("",)), "a😀b") == ["a", "😀", "b"]


def test_by_tokens_counts_the_given_tokenizer() -> None:
    chunker = RecursiveCharacterChunker(5, 0, (" ",), tokenizer=minilm_tokenizer())
    # WordPiece: "tokenization " is 2 tokens, "unbelievably " 5, "fun, " 2, "really." 2
    assert texts(chunker, "Tokenization is unbelievably fun, really.") == [
        "Tokenization is ",
        "unbelievably ",
        "fun, really.",
    ]
    assert chunker.fingerprint != by_tokens(5, 0, (" ",)).fingerprint
    assert chunker.fingerprint != RecursiveCharacterChunker(5, 0, (" ",)).fingerprint
