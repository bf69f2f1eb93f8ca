"""Excerpt-first generation: passages chosen first, one question each, through the real client."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus import Corpus
from rag_eval_pipeline.core.generation.llm_excerpt_first import ExcerptFirstGenerator, parse_question
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.json_reply import InvalidReply
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline_tests.openai_server import openai_server

REPO = Path(__file__).resolve().parents[3]


def test_parse_question_takes_json_or_the_first_line_that_asks() -> None:
    assert parse_question('{"question": "How fast is the pump?"}') == "How fast is the pump?"
    assert parse_question("Sure!\nQuestion 1: How fast is the pump? It runs fast.") == "How fast is the pump?"
    assert parse_question('1. "When is the valve tested?"') == "When is the valve tested?"
    with pytest.raises(InvalidReply, match="no question"):
        parse_question("The pump runs at 1,450 rpm.")
    with pytest.raises(InvalidReply, match="too short"):
        parse_question("Why?")
    with pytest.raises(InvalidReply, match="asks about the prompt"):
        parse_question("What is the answer to this question?")


def test_each_passage_gets_one_question_and_keeps_its_span(tmp_path: Path) -> None:
    corpus = Corpus.from_folder(REPO / "data" / "corpus")
    with openai_server() as (url, script):
        script.responder = lambda body: "Question: What does the handbook describe here?"
        script.chat_contents = ["I cannot help with that.", "What does the first section describe?"]
        client = LLMClient(OpenAIChatModel("gpt-4o-mini", api_key="k", base_url=url))
        generator = ExcerptFirstGenerator(client, n_questions=6, seed=3)
        result = generator.generate(corpus)
        passages = generator.passages(corpus)
    assert len(result.examples) == 6 and result.rejections == ()
    assert client.usage_snapshot().calls == 7  # one reply without a question was repaired
    for example, passage in zip(result.examples, passages, strict=True):
        (span,) = example.relevant_spans
        assert span == passage.span and corpus[span.doc_id].text[span.start : span.end] == span.text
        assert example.metadata["generator"] == "llm-excerpt-first"
    assert len({e.question_id for e in result.examples}) == 6
