"""Token-level LLM generation through the real `openai` client against a scripted local server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.corpus import Corpus
from rag_eval_pipeline.core.datasets import TokenLevelDataset, read_token_level_jsonl, write_jsonl
from rag_eval_pipeline.core.generation.llm_token_level import LLMTokenLevelGenerator, related_pairs, sections
from rag_eval_pipeline.core.llm.cache import ResponseCache
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline.core.llm.retry import RetryPolicy
from rag_eval_pipeline.core.types import Document, DocumentId
from rag_eval_pipeline_tests.conftest import tiny_corpus
from rag_eval_pipeline_tests.core.generation.scripted_llm import token_level_reply
from rag_eval_pipeline_tests.openai_server import openai_server


def client_for(url: str, tmp_path: Path) -> LLMClient:
    model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=url, timeout=5)
    return LLMClient(
        model,
        cache=ResponseCache(tmp_path / "responses.sqlite"),
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.01),
    )


def generate(url: str, tmp_path: Path, corpus: Corpus, **kwargs: Any) -> tuple[Any, LLMClient]:
    client = client_for(url, tmp_path)
    generator = LLMTokenLevelGenerator(client, questions_per_document=2, cross_document_pairs=1, **kwargs)
    return generator.generate(corpus), client


def test_questions_get_exact_spans_and_unlocatable_excerpts_are_rejected(tmp_path: Path) -> None:
    corpus = tiny_corpus()
    assert isinstance(corpus, Corpus)
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
        assert example.metadata["prompt_version"] == "token-level-v1"
    normalised = [e for e in result.examples if e.query.startswith("What else")]
    assert all(e.metadata["difficulty"] == "hard" for e in normalised) and len(normalised) == 3
    cross = [e for e in result.examples if len({s.doc_id for s in e.relevant_spans}) == 2]
    assert len(cross) == 1 and cross[0].metadata["question_type"] == "cross-document"
    # the dataset file round-trips through the validating reader
    path = tmp_path / "synthetic.jsonl"
    write_jsonl(TokenLevelDataset(result.examples), path)
    assert len(read_token_level_jsonl(path, corpus)) == 7


def test_broken_json_is_repaired_and_a_rerun_costs_nothing(tmp_path: Path) -> None:
    corpus = tiny_corpus()
    assert isinstance(corpus, Corpus)
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
