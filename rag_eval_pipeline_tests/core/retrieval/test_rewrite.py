"""Query rewriting through the real `openai` client against a scripted local server."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.llm.accounting import BudgetExceeded, Price
from rag_eval_pipeline.core.retrieval.rewrite import LLMQueryRewriter, clean_rewrite
from rag_eval_pipeline_tests.openai_server import openai_server, scripted_client

PROMPT = "Rewrite the question as a search query."


def rewriter_for(
    url: str, tmp_path: Path, budget_usd: float | None = None, **prices: Price
) -> LLMQueryRewriter:
    return LLMQueryRewriter(scripted_client(url, tmp_path, prices=prices), PROMPT, budget_usd)


def test_rewrites_are_cleaned_cached_and_a_failure_keeps_the_question(tmp_path: Path):
    questions = ["how fast pump?", "who leads nights", "valve?"]
    with openai_server() as (url, script):
        replies = {
            "how fast pump?": 'Query: "main pump speed rpm"\nextra line',
            "who leads nights": "who leads nights",
            "valve?": "",
        }
        script.responder = lambda body: replies[body["messages"][-1]["content"]]
        rewriter = rewriter_for(url, tmp_path)
        outcomes = rewriter.rewrite(questions)
        first_calls = len(script.chat_requests)
        again = rewriter_for(url, tmp_path).rewrite(questions[:2])
        assert len(script.chat_requests) == first_calls  # from the response cache
        script.faults = [(500, {}), (500, {})]
        failed = rewriter_for(url, tmp_path).rewrite(["a question never asked"])
    assert [(o.text, o.status) for o in outcomes] == [
        ("main pump speed rpm", "rewritten"),
        ("who leads nights", "unchanged"),
        ("valve?", "failed"),
    ]
    assert "no query in the reply" in outcomes[2].error
    assert [o.text for o in again] == ["main pump speed rpm", "who leads nights"]
    # what each reply cost when the model made it (the server counts words): kept for a cached reply,
    # 0 without a reply
    prompt_words = len(PROMPT.split()) + len(questions[0].split())
    reply_words = len(replies["how fast pump?"].split())
    assert (outcomes[0].prompt_tokens, outcomes[0].completion_tokens) == (prompt_words, reply_words)
    assert [(o.prompt_tokens, o.completion_tokens) for o in again] == [
        (o.prompt_tokens, o.completion_tokens) for o in outcomes[:2]
    ]
    assert (failed[0].prompt_tokens, failed[0].completion_tokens) == (0, 0)
    assert failed[0].status == "failed" and failed[0].text == "a question never asked"
    assert "llm call failed" in failed[0].error
    request = script.chat_requests[0]
    assert request["messages"][0] == {"role": "system", "content": PROMPT}
    assert request["temperature"] == 0.0


def test_budget_is_checked_before_any_request(tmp_path: Path):
    with openai_server() as (url, script):
        rewriter = rewriter_for(url, tmp_path, 1e-9, **{"gpt-4o-mini": Price(1000.0, 1000.0)})
        with pytest.raises(BudgetExceeded, match="exceeds the budget cap"):
            rewriter.rewrite(["how fast does the pump run?"])
        assert script.chat_requests == []


@pytest.mark.parametrize(
    ("reply", "query"),
    [
        ("pump speed", "pump speed"),
        ("  \n'pump speed'\n", "pump speed"),
        ("Search query: pump speed", "pump speed"),
        ("Rewritten query: “pump speed”", "pump speed"),
        ("", ""),
    ],
)
def test_clean_rewrite(reply: str, query: str):
    assert clean_rewrite(reply) == query
