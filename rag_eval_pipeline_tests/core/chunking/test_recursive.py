from __future__ import annotations

from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker

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


def test_separators_and_whitespace_are_kept() -> None:
    text = "\n\n  lead\n\n\n\ntrail  \n"
    assert "".join(texts(RecursiveCharacterChunker(6, 0), text)) == text
