from __future__ import annotations

from rag_eval_pipeline.core.chunking.sentences import sentence_spans


def pieces(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def test_sentences_end_at_punctuation_runs_and_newlines_keeping_whitespace() -> None:
    text = "One. Two?! Three\nFour...  Five"
    assert pieces(text) == ["One. ", "Two?! ", "Three\n", "Four...  ", "Five"]


def test_decimals_and_abbreviation_dots_inside_words_do_not_end_a_sentence() -> None:
    assert pieces("Pi is 3.14 today. Yes.") == ["Pi is 3.14 today. ", "Yes."]


def test_leading_blank_run_joins_the_first_sentence() -> None:
    assert pieces("\n\n  Hello. World") == ["\n\n  Hello. ", "World"]
    assert pieces("   ") == ["   "]
    assert pieces("") == []
