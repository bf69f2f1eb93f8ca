"""Query rewriting before retrieval, through the shared LLM client (cached, rate-limited, retried).

A rewrite that fails keeps the original question and says so: retrieval never loses a question to
an LLM fault.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..llm.accounting import check_budget
from ..llm.base import ChatMessage, CompletionParams, LLMError
from ..llm.client import LLMClient
from ..progress import Progress, no_progress
from ..types import RewriteStatus

_LABEL = re.compile(r"^(?:rewritten\s+)?(?:search\s+)?query\s*:\s*", re.IGNORECASE)
_QUOTES = "\"'`“”‘’"


@dataclass(frozen=True)
class RewrittenQuery:
    original: str
    text: str  # what the retrievers are given
    status: RewriteStatus
    error: str = ""
    # what the rewrite's reply cost when the model made it (a cached reply keeps its counts): 0 when off
    # or when no reply came
    prompt_tokens: int = 0
    completion_tokens: int = 0


class QueryRewriter(Protocol):
    @property
    def model_id(self) -> str: ...

    def rewrite(self, queries: Sequence[str], progress: Progress = no_progress) -> list[RewrittenQuery]:
        """One outcome per query, in input order; never raises for a failed rewrite."""
        ...


def not_rewritten(queries: Sequence[str]) -> list[RewrittenQuery]:
    return [RewrittenQuery(q, q, "off") for q in queries]


def clean_rewrite(reply: str) -> str:
    """The query in a reply: its first non-empty line, without a 'Query:' label or wrapping quotes."""
    line = next((ln.strip() for ln in reply.splitlines() if ln.strip()), "")
    return _LABEL.sub("", line).strip().strip(_QUOTES).strip()


class LLMQueryRewriter:
    def __init__(
        self, client: LLMClient, prompt: str, budget_usd: float | None = None, max_tokens: int = 96
    ) -> None:
        self.client = client
        self.prompt = prompt
        self.budget_usd = budget_usd
        self.params = CompletionParams(temperature=0.0, max_tokens=max_tokens)

    @property
    def model_id(self) -> str:
        return self.client.model_id

    def messages(self, query: str) -> list[ChatMessage]:
        return [ChatMessage("system", self.prompt), ChatMessage("user", query)]

    def rewrite(self, queries: Sequence[str], progress: Progress = no_progress) -> list[RewrittenQuery]:
        """Refuses (``BudgetExceeded``) before any call when the uncached requests would cost too much."""
        check_budget(
            self.client.estimate([(self.messages(q), self.params) for q in queries]), self.budget_usd
        )
        return self.client.map(self._one, list(queries), progress, "query rewriting")

    def _one(self, query: str) -> RewrittenQuery:
        try:
            completion = self.client.complete(self.messages(query), self.params)
        except LLMError as exc:
            return RewrittenQuery(query, query, "failed", f"llm call failed: {exc}")
        text = clean_rewrite(completion.text)
        status: RewriteStatus = "failed" if not text else "unchanged" if text == query else "rewritten"
        return RewrittenQuery(
            query,
            text or query,
            status,
            f"no query in the reply {completion.text[:80]!r}" if not text else "",
            completion.prompt_tokens,
            completion.completion_tokens,
        )
