"""Context recall without reference answers: a free heuristic for every question, and an LLM judge
only for the questions the heuristic flags (escalation), so most questions cost nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..llm.base import ChatMessage, CompletionParams
from ..llm.client import LLMClient
from ..llm.json_reply import InvalidReply
from ..types import QueryTrace, RetrievedChunk
from .grounding import content_stems
from .types import Answer, MetricOutcome

RecallWarning = Literal["HIT_RETRIEVAL_LIMIT", "HIGH_THRESHOLD_FILTERING"]

RETRIEVAL_LIMIT_PENALTY = 0.7
THRESHOLD_FILTERING_PENALTY = 0.85
# More than this share of the dense candidates removed by the similarity threshold is "high".
HIGH_FILTERING_SHARE = 0.5
DEFAULT_RECALL_THRESHOLD = 0.7
# The judge reads at most this many chunks (in rank order): enough for any sensible top_k, and a cap
# on the prompt's cost.
JUDGE_MAX_CHUNKS = 10

RECALL_JUDGE_PROMPT = (
    "You check whether retrieved context is enough to answer a question. Judge only the context, not "
    "your own knowledge. Reply with only a JSON object: "
    '{"recall": <number from 0 to 1>, "missing": "<what needed information the context lacks, or an '
    'empty string>"}. recall is the share of the information needed to answer the question fully that '
    "the context contains: 1 when it contains all of it, 0 when it contains none."
)
_SCHEMA_HINT = '{"recall": 0.8, "missing": "the date the valve was replaced"}'


def recall_warnings(
    answer: Answer, hits: Sequence[RetrievedChunk], trace: QueryTrace, *, top_k: int, candidate_depth: int
) -> tuple[RecallWarning, ...]:
    """Signs that retrieval left relevant context out.

    HIT_RETRIEVAL_LIMIT: a retriever returned as many candidates as it was asked for
    (``knn_candidates`` or ``bm25_candidates`` >= ``candidate_depth``) AND the answer cites the chunk
    at rank ``top_k``, the cut-off: relevant context reaches the end of the list, so more may lie
    beyond it. A list shorter than top_k was not cut, so it never raises this warning.
    HIGH_THRESHOLD_FILTERING: the similarity threshold removed more than half of the dense
    candidates (``knn_below_threshold / knn_candidates > 0.5``).
    """
    warnings: list[RecallWarning] = []
    exhausted = max(trace.knn_candidates, trace.bm25_candidates) >= candidate_depth
    at_cutoff = {h.chunk_id for h in hits if h.rank == top_k}
    if exhausted and at_cutoff & set(answer.cited_chunk_ids):
        warnings.append("HIT_RETRIEVAL_LIMIT")
    if trace.knn_candidates > 0 and trace.knn_below_threshold / trace.knn_candidates > HIGH_FILTERING_SHARE:
        warnings.append("HIGH_THRESHOLD_FILTERING")
    return tuple(warnings)


def context_recall_heuristic(
    question: str,
    answer: Answer,
    hits: Sequence[RetrievedChunk],
    warnings: Sequence[RecallWarning],
) -> MetricOutcome:
    """A zero-cost estimate of whether the retrieved context holds what the question asks for.

    Our stand-in for the seed's "contributing / available chunks", which needs no reference: 0 when
    the answer abstained (nothing in the context was usable); otherwise the share of the question's
    distinct stemmed content terms that occur in the retrieved chunks' text. Then the seed's
    penalties: x0.7 with HIT_RETRIEVAL_LIMIT, else x0.85 with HIGH_THRESHOLD_FILTERING (one penalty,
    the stronger). Skipped when the question has no content terms (nothing to cover).
    """
    penalty, note = 1.0, ""
    if "HIT_RETRIEVAL_LIMIT" in warnings:
        penalty, note = RETRIEVAL_LIMIT_PENALTY, f"; x{RETRIEVAL_LIMIT_PENALTY} for HIT_RETRIEVAL_LIMIT"
    elif "HIGH_THRESHOLD_FILTERING" in warnings:
        penalty = THRESHOLD_FILTERING_PENALTY
        note = f"; x{THRESHOLD_FILTERING_PENALTY} for HIGH_THRESHOLD_FILTERING"
    if answer.abstained:
        return MetricOutcome.ok(0.0, "the answer abstained")
    wanted = content_stems(question)
    if not wanted:
        return MetricOutcome.skipped("the question has no content terms")
    available: frozenset[str] = frozenset().union(*(content_stems(h.text) for h in hits))
    covered = len(wanted & available)
    return MetricOutcome.ok(
        penalty * covered / len(wanted),
        f"{covered} of {len(wanted)} question terms in the retrieved text{note}",
    )


@dataclass(frozen=True)
class Escalation:
    escalate: bool
    reason: str


def escalation(
    heuristic: MetricOutcome,
    warnings: Sequence[RecallWarning],
    recall_threshold: float = DEFAULT_RECALL_THRESHOLD,
) -> Escalation:
    """Ask the LLM when the heuristic is below the threshold, raised a warning, or could not tell
    (skipped or failed): a cheap metric that cannot judge a question must not hide it."""
    reasons = []
    if heuristic.status != "ok" or heuristic.value is None:
        reasons.append(f"heuristic {heuristic.status}: {heuristic.detail}")
    elif heuristic.value < recall_threshold:
        reasons.append(f"heuristic {heuristic.value:.2f} < {recall_threshold:g}")
    reasons += [f"warning {w}" for w in warnings]
    if reasons:
        return Escalation(True, "; ".join(reasons))
    assert heuristic.value is not None
    return Escalation(False, f"heuristic {heuristic.value:.2f} >= {recall_threshold:g}, no warning")


@dataclass(frozen=True)
class RecallVerdict:
    recall: float
    missing: str


def parse_recall_reply(reply: dict[str, Any]) -> RecallVerdict:
    """``{"recall": 0..1, "missing": str}``; anything else is an ``InvalidReply`` saying what is wrong."""
    recall = reply.get("recall")
    if isinstance(recall, bool) or not isinstance(recall, int | float):
        raise InvalidReply(f'"recall" must be a number from 0 to 1, got {recall!r}')
    if not 0.0 <= float(recall) <= 1.0:
        raise InvalidReply(f'"recall" must lie between 0 and 1, got {recall!r}')
    missing = reply.get("missing", "")
    if not isinstance(missing, str):
        raise InvalidReply(f'"missing" must be a string, got {missing!r}')
    return RecallVerdict(float(recall), missing.strip())


class LLMRecallJudge:
    """Asks a model whether the retrieved context holds everything needed to answer the question."""

    def __init__(
        self,
        client: LLMClient,
        repair_attempts: int = 1,
        max_tokens: int = 200,
        max_chunks: int = JUDGE_MAX_CHUNKS,
    ) -> None:
        self.client = client
        self.repair_attempts = repair_attempts
        self.max_chunks = max_chunks
        self.params = CompletionParams(temperature=0.0, max_tokens=max_tokens, json_mode=True)

    @property
    def model_id(self) -> str:
        return self.client.model_id

    def messages(self, question: str, hits: Sequence[RetrievedChunk]) -> list[ChatMessage]:
        ranked = sorted(hits, key=lambda h: (h.rank, h.chunk_id))[: self.max_chunks]
        context = "\n\n".join(f"[{i}] {h.text.strip()}" for i, h in enumerate(ranked, 1)) or "(no context)"
        return [
            ChatMessage("system", RECALL_JUDGE_PROMPT),
            ChatMessage("user", f"Question: {question}\n\nContext:\n{context}"),
        ]

    def request(
        self, question: str, hits: Sequence[RetrievedChunk]
    ) -> tuple[list[ChatMessage], CompletionParams]:
        return self.messages(question, hits), self.params

    def judge(self, question: str, hits: Sequence[RetrievedChunk]) -> MetricOutcome:
        """The judged recall, or a failed outcome (never a 0) when no valid reply came after the repair
        attempts or the call itself failed."""
        outcome = self.client.complete_json(
            self.messages(question, hits),
            self.params,
            parse_recall_reply,
            _SCHEMA_HINT,
            self.repair_attempts,
        )
        if outcome.value is None:
            return MetricOutcome.failed(outcome.error or "no reply")
        missing = outcome.value.missing
        repaired = f" (valid after {outcome.attempts} attempts)" if outcome.attempts > 1 else ""
        return MetricOutcome.ok(
            outcome.value.recall, (f"missing: {missing}" if missing else "nothing missing") + repaired
        )
