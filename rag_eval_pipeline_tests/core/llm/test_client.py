"""The LLM client driven through the real `openai` SDK against a local server with scripted faults."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.llm.accounting import BudgetExceeded, Price, PriceTable, check_budget
from rag_eval_pipeline.core.llm.base import ChatMessage, CompletionParams, PermanentLLMError
from rag_eval_pipeline.core.llm.cache import ResponseCache
from rag_eval_pipeline.core.llm.client import LLMClient, RetriesExhausted, UnexpectedLLMError
from rag_eval_pipeline.core.llm.json_reply import InvalidReply, parse_json_object
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline.core.llm.rate_limit import RateLimiter
from rag_eval_pipeline.core.llm.retry import RetryPolicy
from rag_eval_pipeline_tests.openai_server import BROKEN_REPLIES, RawReply, Slow, openai_server

ASK = [ChatMessage("system", "You write JSON."), ChatMessage("user", "Give me a number.")]
PARAMS = CompletionParams(max_tokens=50, json_mode=True)


class Sleeps:
    """Records the waits the client asks for instead of sleeping them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(url: str, tmp_path: Path, sleeps: Sleeps | None = None, **kwargs: Any) -> LLMClient:
    timeout = kwargs.pop("timeout", 5.0)
    model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test-secret", base_url=url, timeout=timeout)
    return LLMClient(
        model,
        cache=ResponseCache(tmp_path / "responses.sqlite"),
        retry=kwargs.pop("retry", RetryPolicy(max_attempts=4, base_delay_s=0.5)),
        sleep=sleeps or Sleeps(),
        **kwargs,
    )


def number(obj: dict[str, Any]) -> int:
    if not isinstance(obj.get("n"), int):
        raise InvalidReply('field "n" must be an integer')
    return int(obj["n"])


def test_reply_usage_and_cache_across_clients(tmp_path: Path) -> None:
    with openai_server() as (url, script):
        script.chat_contents = ['{"n": 7}']
        client = make_client(url, tmp_path)
        first = client.complete(ASK, PARAMS)
        assert first.text == '{"n": 7}'
        body = script.chat_requests[0]
        assert body["model"] == "gpt-4o-mini" and body["response_format"] == {"type": "json_object"}
        assert script.auth_headers[0] == "Bearer sk-test-secret"
        again = make_client(url, tmp_path)  # a new process after a crash: same cache file
        assert again.complete(ASK, PARAMS).text == '{"n": 7}'
        assert len(script.chat_requests) == 1
    used = client.usage_snapshot()
    assert (used.calls, used.cache_hits, used.prompt_tokens > 0, used.completion_tokens) == (1, 0, True, 2)
    assert used.cost_usd is not None and used.cost_usd > 0
    reused = again.usage_snapshot()
    assert (reused.calls, reused.cache_hits, reused.cost_usd) == (0, 1, 0.0)
    assert "sk-test-secret" not in client.model_id


def test_429_retry_after_and_5xx_are_retried_and_counted(tmp_path: Path) -> None:
    sleeps = Sleeps()
    with openai_server() as (url, script):
        script.faults = [(429, {"Retry-After": "3"}), (500, {}), (503, {})]
        client = make_client(url, tmp_path, sleeps)
        assert client.complete(ASK, PARAMS).text.startswith("echo:")
        assert len(script.chat_requests) == 4
    assert client.usage_snapshot().retries == 3
    assert sleeps.waits[0] >= 3.0  # the server's Retry-After wins over a shorter backoff
    assert 0.25 <= sleeps.waits[1] <= 1.0 and 0.5 <= sleeps.waits[2] <= 2.0  # exponential, jittered


def test_a_reply_slower_than_the_timeout_is_retried(tmp_path: Path) -> None:
    with openai_server() as (url, script):
        script.faults = [Slow(1.5)]
        client = make_client(url, tmp_path, timeout=0.3)
        assert client.complete(ASK, PARAMS).text.startswith("echo:")
    assert client.usage_snapshot().retries == 1


def test_exhausted_retries_become_a_failed_outcome_not_an_exception(tmp_path: Path) -> None:
    with openai_server() as (url, script):
        script.faults = [(500, {})] * 3
        client = make_client(url, tmp_path, retry=RetryPolicy(max_attempts=3, base_delay_s=0.01))
        with pytest.raises(RetriesExhausted, match="3 attempts"):
            client.complete(ASK, PARAMS)
        script.faults = [(500, {})] * 3
        outcome = client.complete_json(ASK, PARAMS, number, '{"n": <integer>}')
    assert not outcome.ok and outcome.error is not None and "llm call failed" in outcome.error
    assert client.usage_snapshot().failures == 2


def test_permanent_errors_are_not_retried(tmp_path: Path) -> None:
    with openai_server() as (url, script):
        script.faults = [(401, {})]
        client = make_client(url, tmp_path)
        with pytest.raises(PermanentLLMError, match="401") as caught:
            client.complete(ASK, PARAMS)
        assert len(script.chat_requests) == 1
    assert "sk-test-secret" not in str(caught.value)


@pytest.mark.parametrize("broken", BROKEN_REPLIES, ids=["truncated-json", "html-page", "empty-body"])
def test_a_malformed_200_reply_is_a_transient_fault_retried_with_backoff(
    tmp_path: Path, broken: RawReply
) -> None:
    with openai_server() as (url, script):
        script.faults = [broken]
        sleeps = Sleeps()
        client = make_client(url, tmp_path, sleeps)
        assert client.complete(ASK, PARAMS).text.startswith("echo:")
        script.fault_for = lambda body: broken  # always broken: a failed call that says why
        with pytest.raises(RetriesExhausted, match="malformed reply") as caught:
            client.complete([ChatMessage("user", "another question")], PARAMS)
    usage = client.usage_snapshot()
    assert (usage.calls, usage.retries, usage.failures) == (6, 4, 1) and len(sleeps.waits) == 4
    assert "4 attempts" in str(caught.value)


class Exploding:
    """A ChatModel whose backend raises what no one classified."""

    model_id = "test:exploding"
    model_name = "exploding"

    def complete(self, messages: Any, params: CompletionParams) -> Any:
        raise KeyError("choices")


def test_an_unexpected_exception_from_a_chat_model_is_a_counted_failed_call(tmp_path: Path) -> None:
    client = LLMClient(Exploding(), retry=RetryPolicy(max_attempts=3, base_delay_s=0.01), sleep=Sleeps())
    with pytest.raises(UnexpectedLLMError, match="test:exploding raised KeyError: 'choices'"):
        client.complete(ASK, PARAMS)
    outcome = client.complete_json(ASK, PARAMS, number, '{"n": <integer>}')
    assert outcome.failure == "llm_failed" and outcome.error is not None and "KeyError" in outcome.error
    usage = client.usage_snapshot()
    assert (usage.calls, usage.retries, usage.failures) == (2, 0, 2)


def test_broken_json_is_repaired_with_a_second_prompt(tmp_path: Path) -> None:
    with openai_server() as (url, script):
        script.chat_contents = ['Sure! {"n": seven', '```json\n{"n": 7}\n```']
        client = make_client(url, tmp_path)
        outcome = client.complete_json(ASK, PARAMS, number, '{"n": <integer>}')
        repair = script.chat_requests[1]["messages"]
    assert outcome.ok and outcome.value == 7 and outcome.attempts == 2
    assert repair[-2] == {"role": "assistant", "content": 'Sure! {"n": seven'}
    assert "not a JSON object" in repair[-1]["content"] and '{"n": <integer>}' in repair[-1]["content"]


def test_schema_invalid_twice_is_a_failed_outcome_with_the_reason(tmp_path: Path) -> None:
    with openai_server() as (url, script):
        script.chat_contents = ['{"n": "seven"}', '{"m": 7}']
        client = make_client(url, tmp_path)
        outcome = client.complete_json(ASK, PARAMS, number, '{"n": <integer>}')
    assert not outcome.ok and outcome.raw == '{"m": 7}'
    assert outcome.error == 'invalid reply after 2 attempts: field "n" must be an integer'


def test_parse_json_object_tolerates_fences_and_prose() -> None:
    assert parse_json_object('Here: ```json\n{"a": [1, 2]}\n``` done') == {"a": [1, 2]}
    assert parse_json_object('noise {"a": {"b": 1}} trailing') == {"a": {"b": 1}}
    with pytest.raises(InvalidReply):
        parse_json_object("[1, 2]")


def test_rate_limiter_spaces_requests_and_caps_concurrency() -> None:
    now = [0.0]
    sleeps = Sleeps()

    def sleep(seconds: float) -> None:
        sleeps(seconds)
        now[0] += seconds

    limiter = RateLimiter(requests_per_minute=120, clock=lambda: now[0], sleep=sleep)
    for _ in range(4):
        with limiter.slot():
            pass
    assert sleeps.waits == [0.5, 0.5, 0.5] and limiter.waited_s == pytest.approx(1.5)

    capped = RateLimiter(max_concurrency=2)
    in_flight, peak, lock = [0], [0], threading.Lock()

    def work() -> None:
        with capped.slot():
            with lock:
                in_flight[0] += 1
                peak[0] = max(peak[0], in_flight[0])
            time.sleep(0.05)
            with lock:
                in_flight[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 2


def test_map_keeps_input_order_under_concurrency(tmp_path: Path) -> None:
    with openai_server() as (url, script):
        script.responder = lambda body: json.dumps({"n": int(body["messages"][-1]["content"])})
        client = make_client(url, tmp_path, limiter=RateLimiter(max_concurrency=3))
        items = list(range(12))
        seen: list[tuple[str, int, int]] = []
        results = client.map(
            lambda i: client.complete_json([ChatMessage("user", str(i))], PARAMS, number, "{}").value,
            items,
            progress=lambda stage, done, total: seen.append((stage, done, total)),
        )
    assert results == items
    assert seen[0] == ("llm calls", 0, 12) and seen[-1] == ("llm calls", 12, 12)


def test_budget_refuses_an_estimate_over_the_cap_and_ignores_cached_requests(tmp_path: Path) -> None:
    with openai_server() as (url, _script):
        client = make_client(url, tmp_path)
        requests = [([ChatMessage("user", "x" * 4000)], CompletionParams(max_tokens=1000))] * 3
        estimate = client.estimate(requests)
        assert (estimate.n_requests, estimate.n_cached) == (3, 0)
        assert estimate.cost_usd == pytest.approx((3 * 1007 * 0.15 + 3 * 1000 * 0.60) / 1e6)
        with pytest.raises(BudgetExceeded, match=r"exceeds the budget cap \$0\.0010 by \$0\.0013"):
            check_budget(estimate, budget_usd=0.001)
        check_budget(estimate, budget_usd=0.01)
        client.complete(*requests[0])
        assert client.estimate(requests).n_cached == 3  # three times the same request, now cached
        check_budget(client.estimate(requests), budget_usd=0.0)


def test_a_model_without_a_price_cannot_pass_a_budget(tmp_path: Path) -> None:
    with openai_server() as (url, _script):
        model = OpenAIChatModel("llama3", api_key="x", base_url=url)
        client = LLMClient(model, prices=PriceTable({"gpt-4o-mini": Price(0.15, 0.6)}))
        estimate = client.estimate([(ASK, PARAMS)])
    assert estimate.cost_usd is None and model.model_id.startswith("openai:llama3@127.0.0.1:")
    with pytest.raises(BudgetExceeded, match="has no price"):
        check_budget(estimate, budget_usd=1.0)
    check_budget(estimate, budget_usd=None)
