"""Token-level LLM generation through the real `openai` client against a scripted local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.llm_token_level import LLMTokenLevelGenerator, related_pairs, sections
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, read_token_level_jsonl, write_jsonl
from rag_eval_pipeline.core.tables import generated_token_level_to_frame, questions_from_frame
from rag_eval_pipeline.core.types import Document, DocumentId
from rag_eval_pipeline_tests.conftest import tiny_corpus
from rag_eval_pipeline_tests.core.generation.scripted_llm import answer_for, token_level_reply
from rag_eval_pipeline_tests.openai_server import openai_server, scripted_client


def tiny() -> Corpus:
    corpus = tiny_corpus()
    assert isinstance(corpus, Corpus)
    return corpus


def generate(url: str, tmp_path: Path, corpus: Corpus, **kwargs: Any) -> tuple[Any, LLMClient]:
    client = scripted_client(url, tmp_path, max_attempts=3)
    generator = LLMTokenLevelGenerator(client, questions_per_document=2, cross_document_pairs=1, **kwargs)
    return generator.generate(corpus), client


def test_questions_get_exact_spans_and_unlocatable_excerpts_are_rejected(tmp_path: Path) -> None:
    corpus = tiny()
    with openai_server() as (url, script):
        script.responder = token_level_reply
        result, client = generate(url, tmp_path, corpus)
    # 3 documents x 2 questions + 1 pair question + 1 question quoting text that is not in valves.md
    assert len(result.examples) == 7 and len(result.rejections) == 1
    rejection = result.rejections[0]
    assert rejection.reason == "excerpt_not_found" and rejection.question == "Who painted the valves?"
    assert "alpha/valves.md" in rejection.detail
    for example in result.examples:
        for span in example.relevant_spans:
            assert corpus[span.doc_id].text[span.start : span.end] == span.text
        assert example.metadata["generator"] == "llm-quoted-excerpts"
        assert example.metadata["model"] == client.model_id
        assert example.metadata["prompt_version"] == "token-level-v2"
    normalised = [e for e in result.examples if e.query.startswith("What else")]
    assert all(e.metadata["difficulty"] == "hard" for e in normalised) and len(normalised) == 3
    cross = [e for e in result.examples if len({s.doc_id for s in e.relevant_spans}) == 2]
    assert len(cross) == 1 and cross[0].metadata["question_type"] == "cross-document"
    # the dataset file round-trips through the validating reader
    path = tmp_path / "synthetic.jsonl"
    write_jsonl(TokenLevelDataset(result.examples), path)
    assert len(read_token_level_jsonl(path, corpus)) == 7


def test_reference_answers_land_in_examples_jsonl_and_frames(tmp_path: Path) -> None:
    corpus = tiny()
    with openai_server() as (url, script):
        script.responder = token_level_reply
        result, _ = generate(url, tmp_path, corpus)
    assert "reference answer" in script.chat_requests[0]["messages"][1]["content"]
    for example in result.examples:
        # each answer is the one written for this question, from its first quoted sentence
        assert example.reference_answer is not None
        assert example.reference_answer.endswith(f"(answers: {example.query})")
        assert example.reference_answer.startswith(example.relevant_spans[0].text)
        assert example.expected_keywords == ()  # this generator asks for no keywords
    dataset = TokenLevelDataset(result.examples, name="synthetic")

    path = tmp_path / "synthetic.jsonl"
    write_jsonl(dataset, path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["outputs"]["reference_answer"] for line in lines] == [
        e.reference_answer for e in result.examples
    ]
    again = read_token_level_jsonl(path, corpus)
    assert again.examples == dataset.examples  # equality covers the answers
    assert [e.reference_answer for e in again] == [e.reference_answer for e in dataset]
    assert again.answers_sha256 == dataset.answers_sha256

    frame = generated_token_level_to_frame(dataset, result.rejections)
    frame.to_parquet(tmp_path / "questions.parquet")
    stored = pd.read_parquet(tmp_path / "questions.parquet")
    rejected = stored[stored["status"] == "rejected"]
    assert len(rejected) == 1 and rejected["expected_keywords"].map(len).tolist() == [0]
    back = questions_from_frame(stored)
    assert back.examples == dataset.examples and back.answers_sha256 == dataset.answers_sha256


def test_a_question_without_a_reference_answer_gets_the_repair_prompt(tmp_path: Path) -> None:
    text = "The pump runs at 1,450 rpm. It is serviced every 90 days by the night shift."
    corpus = Corpus((Document(DocumentId("a.md"), text),))
    no_answer = {
        "question": "How fast does the pump run?",
        "excerpts": [{"doc_id": "a.md", "text": "The pump runs at 1,450 rpm."}],
    }
    with openai_server() as (url, script):
        script.responder = token_level_reply
        script.chat_contents = [json.dumps({"questions": [no_answer]})]
        repaired, client = generate(url, tmp_path / "first", corpus)
        repair = script.chat_requests[1]["messages"][-1]["content"]
        blank_answer = {**no_answer, "reference_answer": " "}
        script.chat_contents = [
            json.dumps({"questions": [no_answer]}),
            json.dumps({"questions": [blank_answer]}),
        ]
        rejected, _ = generate(url, tmp_path / "second", corpus)
    assert client.usage_snapshot().calls == 2
    assert "questions[0].reference_answer must be one or two sentences" in repair
    # the repaired reply is the scripted model's, with an answer to every question
    assert [(e.query, e.reference_answer) for e in repaired.examples] == [
        (q, answer_for(q, sentence))
        for q, sentence in [
            ("What does a.md say first?", "The pump runs at 1,450 rpm."),
            ("What else does a.md say?", "It is serviced every 90 days by the night shift."),
        ]
    ]
    assert rejected.examples == ()
    (rejection,) = rejected.rejections
    assert rejection.reason == "invalid_reply"
    assert "after 2 attempts: questions[0].reference_answer must be" in rejection.detail


def test_broken_json_is_repaired_and_a_rerun_costs_nothing(tmp_path: Path) -> None:
    corpus = tiny()
    with openai_server() as (url, script):
        script.responder = token_level_reply
        script.chat_contents = ['{"questions": [{"question": "cut off']
        script.faults = [(429, {"Retry-After": "0"})]
        first, client = generate(url, tmp_path, corpus)
        sent = len(script.chat_requests)
        again, rerun = generate(url, tmp_path, corpus)
        assert len(script.chat_requests) == sent  # everything came from the response cache
    usage = client.usage_snapshot()
    assert usage.retries == 1 and usage.calls == 4 + 1 + 1  # 4 prompts, one 429, one repair
    assert [e.question_id for e in again.examples] == [e.question_id for e in first.examples]
    assert rerun.usage_snapshot().calls == 0 and rerun.usage_snapshot().cache_hits == 5


def test_a_reply_that_stays_broken_is_a_rejection_with_the_reason(tmp_path: Path) -> None:
    corpus = Corpus(
        (Document(DocumentId("a.md"), "The pump runs at 1,450 rpm. It is serviced every 90 days."),)
    )
    with openai_server() as (url, script):
        script.chat_contents = ["no json here", '{"questions": []}']
        result, _client = generate(url, tmp_path, corpus)
    assert result.examples == ()
    (rejection,) = result.rejections
    assert rejection.reason == "invalid_reply" and '"questions" must be a non-empty list' in rejection.detail
    assert rejection.metadata["raw"] == '{"questions": []}'


def test_a_call_that_keeps_failing_is_a_rejection_not_a_crash(tmp_path: Path) -> None:
    corpus = Corpus(
        (Document(DocumentId("a.md"), "The pump runs at 1,450 rpm. It is serviced every 90 days."),)
    )
    with openai_server() as (url, script):
        script.faults = [(500, {})] * 3
        result, _ = generate(url, tmp_path, corpus)
    assert [r.reason for r in result.rejections] == ["llm_failed"]


def test_long_documents_are_sent_in_sections_and_spans_map_back(tmp_path: Path) -> None:
    paragraph = "Section {n} says that valve V-{n} opens at {n} bar of pressure.\n\n"
    text = "".join(paragraph.format(n=n) for n in range(40))
    document = Document(DocumentId("long.md"), text)
    parts = sections(document, max_chars=600)
    assert len(parts) > 1 and "".join(p.text for p in parts) == text
    assert all(len(p.text) <= 600 for p in parts)
    corpus = Corpus((document,))
    with openai_server() as (url, script):
        script.responder = token_level_reply
        result, _ = generate(url, tmp_path, corpus, max_document_chars=600)
    assert len(result.examples) >= 2 * len(parts) - 2  # near-duplicate questions may share an id
    for example in result.examples:
        for span in example.relevant_spans:
            assert text[span.start : span.end] == span.text


def test_related_pairs_prefer_documents_that_share_rare_terms() -> None:
    corpus = Corpus(
        (
            Document(DocumentId("a.md"), "The Kestrel scheduler retries freight bookings nightly."),
            Document(DocumentId("b.md"), "Kestrel scheduler bookings are retried by the night shift."),
            Document(DocumentId("c.md"), "Holiday requests go to your manager two weeks ahead."),
        )
    )
    (pair,) = related_pairs(corpus, 5)
    assert {pair[0].doc_id, pair[1].doc_id} == {"a.md", "b.md"}
