"""Excerpt-first generation: passages chosen first, one question each, through the real client."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.llm_excerpt_first import (
    ExcerptFirstGenerator,
    QuestionReply,
    parse_question,
    parse_reply,
)
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.json_reply import InvalidReply
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, read_token_level_jsonl, write_jsonl
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


# Replies SmolLM2-135M gave to the prompt (kept verbatim), and what is taken from them.
SMOLLM2_REPLIES = [
    (
        "Question: How does the watermark affect the ability to reprocess events?\n\n"
        "Answer: The watermark affects the ability to reprocess events by default.",
        "The watermark affects the ability to reprocess events by default.",
        None,
    ),
    ("Question: How long does a mart keep being reviewed?\n\nAnswer: 3 years", "3 years", None),
    ("Question: How does Heron handle the log?", None, "no 'Answer:' line"),
    (
        "Question: How can I use the `/v1/publish` endpoint to send a batch of JSON?\n\nAnswer: The answer "
        "is:\nQuestion: How can I use the `/v1/publish` endpoint to send a JSON batch?\n\nThe answer is:",
        None,
        "the answer is empty",
    ),
    (
        "Question: How can a single tenant with a single-tenant cloud service be managed?\n\nAnswer: [Question]",
        None,
        "is a placeholder",
    ),
    (
        "Question: How can you use the larkdev command to run a stack of stacks?\n\n"
        "Answer: How to use larkdev to run a stack of stacks?",
        None,
        "itself a question",
    ),
    (  # the answer after a second question belongs to that one, not to the first
        "What is the total cost of running Kestrel's infrastructure budget for the 2025 financial year?\n\n"
        "Question: How much does Kestrel's infrastructure budget for the 2025 financial year cost?\n\n"
        "Answer: The answer is: \nKestrel's infrastructure budget for the 2025 financial year costs €1.7 million.",
        None,
        "no 'Answer:' line after the question",
    ),
]


@pytest.mark.parametrize(("raw", "answer", "missing"), SMOLLM2_REPLIES)
def test_parse_reply_takes_the_answer_after_its_label_or_says_why_there_is_none(
    raw: str, answer: str | None, missing: str | None
) -> None:
    reply = parse_reply(raw)
    assert reply.question.endswith("?") and "Question" not in reply.question
    assert reply.reference_answer == answer
    if missing is None:
        assert reply.answer_missing is None
    else:
        assert reply.answer_missing is not None and missing in reply.answer_missing


def test_parse_reply_reads_answers_from_json_and_from_short_labels() -> None:
    assert parse_reply('{"question": "How fast is the pump?", "answer": "At 1,450 rpm."}') == QuestionReply(
        "How fast is the pump?", "At 1,450 rpm."
    )
    assert parse_reply('{"question": "How fast is the pump?", "reference_answer": "1,450 rpm"}') == (
        QuestionReply("How fast is the pump?", "1,450 rpm")
    )
    assert (
        parse_reply('{"question": "How fast is the pump?"}').answer_missing == "the JSON reply has no answer"
    )
    assert parse_reply("Q: How fast is the pump?\nA: It runs at\n1,450 rpm.\n\nQ: And the fan?") == (
        QuestionReply("How fast is the pump?", "It runs at 1,450 rpm.")
    )
    long_answer = "Answer: " + "word " * 200
    assert "more than 600" in str(parse_reply("How fast is the pump?\n" + long_answer).answer_missing)


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
    # no 'Answer:' line in these replies: the questions are kept, without a reference answer, saying why
    assert all(e.reference_answer is None for e in result.examples)
    assert all("no 'Answer:' line" in e.metadata["reference_answer_missing"] for e in result.examples)


def one_line(passage: str) -> str:
    return " ".join(passage.split())[:80].strip()


def test_answers_given_by_the_model_land_in_the_examples_and_the_jsonl(tmp_path: Path) -> None:
    corpus = Corpus.from_folder(REPO / "data" / "corpus")

    def reply(body: dict) -> str:
        passage = body["messages"][1]["content"].split("Passage:\n", 1)[1].split("\n\nWrite", 1)[0]
        first_line = passage.splitlines()[0]
        return f"Question: What does the text say about {first_line[:30]}?\nAnswer: {one_line(passage)}"

    with openai_server() as (url, script):
        script.responder = reply
        script.chat_contents = ["What happens first? Nobody knows."]  # a question without an answer
        client = LLMClient(OpenAIChatModel("gpt-4o-mini", api_key="k", base_url=url))
        result = ExcerptFirstGenerator(client, n_questions=4, seed=3).generate(corpus)
    assert "Answer: <answer from the passage>" in script.chat_requests[0]["messages"][1]["content"]
    answered = [e for e in result.examples if e.reference_answer is not None]
    assert len(result.examples) == 4 and len(answered) == 3
    for example in answered:
        passage = example.relevant_spans[0].text.strip()
        assert example.reference_answer == one_line(passage)
        assert "reference_answer_missing" not in example.metadata
    write_jsonl(TokenLevelDataset(result.examples), tmp_path / "xf.jsonl")
    again = read_token_level_jsonl(tmp_path / "xf.jsonl", corpus)
    assert [e.reference_answer for e in again] == [e.reference_answer for e in result.examples]
