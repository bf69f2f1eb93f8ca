"""One rule for a generated question that is too short: every generator refuses the same questions."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval_pipeline.core.generation.base import has_few_words
from rag_eval_pipeline.core.generation.llm_chunk_level import ChunkTask, parse_questions
from rag_eval_pipeline.core.generation.llm_excerpt_first import parse_reply
from rag_eval_pipeline.core.generation.llm_token_level import Section, Task
from rag_eval_pipeline.core.llm.json_reply import InvalidReply
from rag_eval_pipeline.core.types import ChunkId, Document, DocumentId, PositionAwareChunk

TEXT = "Refunds are paid within 30 days of the request. The finance team approves every refund."


def _chunk_level(question: str) -> list[Any]:
    chunk = PositionAwareChunk(ChunkId("c1"), DocumentId("a.md"), 0, len(TEXT), TEXT)
    item = {
        "question": question,
        "type": "FACTUAL",
        "keywords": ["refunds", "paid", "days"],
        "source_chunks": ["A"],
        "reference_answer": "Within 30 days.",
    }
    return parse_questions(ChunkTask(chunk, None), {"questions": [item]})


def _token_level(question: str) -> list[Any]:
    task = Task((Section(Document(DocumentId("a.md"), TEXT), 0, len(TEXT)),), 1)
    item = {
        "question": question,
        "excerpts": [{"doc_id": "a.md", "text": "Refunds are paid within 30 days"}],
        "reference_answer": "Within 30 days.",
    }
    return task.validate({"questions": [item]})


# "Why not?" passed the token-level generator's old 8-character rule; "Refund window?" had 14 characters.
@pytest.mark.parametrize("question", ["Why not?", "Refund window?", "   Refunds?   ", ""])
def test_every_generator_refuses_the_same_short_question(question: str) -> None:
    assert has_few_words(question)
    with pytest.raises(InvalidReply, match=r"questions\[0\]\.question must be a question of a few words"):
        _chunk_level(question)
    with pytest.raises(InvalidReply, match=r"questions\[0\]\.question must be a question of a few words"):
        _token_level(question)
    if question.strip():
        with pytest.raises(InvalidReply, match="too short to mean anything"):
            parse_reply(question.strip() + "\nAnswer: within 30 days")


@pytest.mark.parametrize("question", ["Who is Ada?", "When are  refunds paid?"])
def test_every_generator_keeps_a_question_of_three_words(question: str) -> None:
    """Three words are enough, however few characters (the old token-level rule counted characters)."""
    normalised = " ".join(question.split())
    assert _chunk_level(question)[0].question == normalised
    assert _token_level(question)[0].question == normalised
    assert parse_reply(question + "\nAnswer: within 30 days").question == question  # kept as written
