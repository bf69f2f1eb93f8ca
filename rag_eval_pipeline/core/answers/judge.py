"""An LLM judge of answer correctness against the reference answer and the chunks the answer cites.

Temperature 0 and a JSON reply checked field by field: an overall score on a fixed six-step scale
plus four criteria with a reason each. A reply that does not pass is sent back with a repair prompt;
when the retries run out, the judgement is ``failed`` with the reason, never a 0 that would read as
"the answer is wrong". The budget is checked on the cost estimate before the first request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..llm.accounting import CostEstimate, check_budget
from ..llm.base import ChatMessage, CompletionParams
from ..llm.client import LLMClient
from ..llm.json_reply import InvalidReply
from ..progress import Progress, no_progress
from ..types import ChunkId, QuestionId
from .types import JUDGE_CRITERIA, JUDGE_SCORES, Criterion, Judgement

JUDGE_PROMPT_VERSION = "answer-judge-v1"
DEFAULT_PASS_SCORE = 0.6
MAX_EXPLANATION_CHARS = 300

SYSTEM_PROMPT = """\
You grade an answer to a question against a reference answer written by a person who knows the \
documents, and against the document chunks the answer cites.

Reply with only a JSON object:
- "score": the overall correctness, exactly one of 0, 0.2, 0.4, 0.6, 0.8, 1.0. 1.0: says what the \
reference says, nothing wrong. 0.8: correct, a minor detail missing. 0.6: mostly correct, a notable \
gap. 0.4: partly correct. 0.2: mostly wrong or evasive. 0: wrong, or no answer ("I don't know").
- "semantic_coverage": how much of the reference's meaning the answer conveys.
- "factual_coverage": how many of the reference's facts (names, numbers, dates) the answer states \
correctly.
- "hallucination": how much of the answer is supported neither by the reference nor by the cited \
chunks; 0 means none, 1 means all of it.
- "citation_accuracy": how well the cited chunks support what the answer says (0 when nothing is \
cited but claims are made).
Each of the four is an object {"score": a number from 0 to 1, "explanation": one or two sentences}."""

SCHEMA_HINT = (
    '{"score": 0 | 0.2 | 0.4 | 0.6 | 0.8 | 1.0, '
    '"semantic_coverage": {"score": <0..1>, "explanation": "<why>"}, '
    '"factual_coverage": {"score": <0..1>, "explanation": "<why>"}, '
    '"hallucination": {"score": <0..1, 0 = none>, "explanation": "<why>"}, '
    '"citation_accuracy": {"score": <0..1>, "explanation": "<why>"}}'
)


@dataclass(frozen=True)
class JudgeItem:
    """One answer to judge; ``cited`` holds the cited chunks' ids and text, in citation order."""

    question_id: QuestionId
    question: str
    reference_answer: str
    answer_text: str
    cited: tuple[tuple[ChunkId, str], ...] = ()


@dataclass(frozen=True)
class JudgeVerdict:
    """A reply that passed validation."""

    score: float
    semantic_coverage: Criterion
    factual_coverage: Criterion
    hallucination: Criterion
    citation_accuracy: Criterion


def trim_explanation(text: str, limit: int = MAX_EXPLANATION_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidReply(f"{where} must be a number, got {value!r}")
    return float(value)


def validate_verdict(obj: dict[str, Any]) -> JudgeVerdict:
    """The reply as a ``JudgeVerdict``; ``InvalidReply`` says what is wrong. Extra keys are ignored."""
    if "score" not in obj:
        raise InvalidReply('"score" is missing')
    raw_score = _number(obj["score"], '"score"')
    score = next((s for s in JUDGE_SCORES if abs(raw_score - s) < 1e-9), None)
    if score is None:
        allowed = ", ".join(f"{s:g}" for s in JUDGE_SCORES)
        raise InvalidReply(f'"score" must be one of {allowed}, got {raw_score:g}')
    criteria: dict[str, Criterion] = {}
    for name in JUDGE_CRITERIA:
        part = obj.get(name)
        if not isinstance(part, dict):
            raise InvalidReply(f'"{name}" must be an object with "score" and "explanation", got {part!r}')
        value = _number(part.get("score"), f'"{name}.score"')
        if not 0.0 <= value <= 1.0:
            raise InvalidReply(f'"{name}.score" must be between 0 and 1, got {value:g}')
        explanation = part.get("explanation")
        if not isinstance(explanation, str) or not explanation.strip():
            raise InvalidReply(f'"{name}.explanation" must be a non-empty string')
        criteria[name] = Criterion(value, trim_explanation(explanation))
    return JudgeVerdict(
        score,
        criteria["semantic_coverage"],
        criteria["factual_coverage"],
        criteria["hallucination"],
        criteria["citation_accuracy"],
    )


def judge_messages(item: JudgeItem) -> list[ChatMessage]:
    if item.cited:
        chunks = "\n\n".join(f"[{chunk_id}]\n{text}" for chunk_id, text in item.cited)
    else:
        chunks = "(the answer cites no chunk)"
    user = (
        f"Question:\n{item.question}\n\nReference answer:\n{item.reference_answer}\n\n"
        f"Answer to grade:\n{item.answer_text}\n\nChunks the answer cites:\n{chunks}\n\n"
        f"Reply with only the JSON object."
    )
    return [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", user)]


class LLMJudge:
    """Grades answers through the shared client (cached, rate-limited, retried, accounted)."""

    def __init__(
        self,
        client: LLMClient,
        *,
        repair_attempts: int = 1,
        pass_score: float = DEFAULT_PASS_SCORE,
        max_tokens: int = 600,
    ) -> None:
        if not 0.0 <= pass_score <= 1.0:
            raise ValueError(f"pass_score must be between 0 and 1, got {pass_score}")
        self.client = client
        self.repair_attempts = repair_attempts
        self.pass_score = pass_score
        # Temperature 0 is part of the judge's definition, not a setting: grades must repeat.
        self.params = CompletionParams(temperature=0.0, max_tokens=max_tokens, json_mode=True)
        self.last_estimate: CostEstimate | None = None

    @property
    def model_id(self) -> str:
        return self.client.model_id

    def requests(self, items: Sequence[JudgeItem]) -> list[tuple[list[ChatMessage], CompletionParams]]:
        """The first request for every item (repairs come on top), for estimates and cache checks."""
        return [(judge_messages(item), self.params) for item in items]

    def estimate(self, items: Sequence[JudgeItem]) -> CostEstimate:
        return self.client.estimate(self.requests(items))

    def is_correct(self, judgement: Judgement) -> bool:
        """An ok judgement at or above ``pass_score``; asking this of a failed one is a bug."""
        if judgement.status != "ok" or judgement.score is None:
            raise ValueError(f"the judgement of {judgement.question_id} failed: {judgement.error}")
        return judgement.score >= self.pass_score

    def judge(self, item: JudgeItem) -> Judgement:
        outcome = self.client.complete_json(
            judge_messages(item), self.params, validate_verdict, SCHEMA_HINT, self.repair_attempts
        )
        verdict = outcome.value
        if verdict is None:
            return Judgement(
                item.question_id,
                self.model_id,
                "failed",
                error=outcome.error or "no verdict",
                attempts=outcome.attempts,
            )
        return Judgement(
            item.question_id,
            self.model_id,
            "ok",
            score=verdict.score,
            semantic_coverage=verdict.semantic_coverage,
            factual_coverage=verdict.factual_coverage,
            hallucination=verdict.hallucination,
            citation_accuracy=verdict.citation_accuracy,
            attempts=outcome.attempts,
        )

    def judge_all(
        self, items: Sequence[JudgeItem], progress: Progress = no_progress, budget_usd: float | None = None
    ) -> list[Judgement]:
        """One judgement per item, in order. The estimate (kept in ``last_estimate`` for the caller
        to log) is checked against ``budget_usd`` before any request: ``BudgetExceeded`` sends none."""
        self.last_estimate = self.estimate(items)
        check_budget(self.last_estimate, budget_usd)
        return self.client.map(self.judge, list(items), progress, "answer judging")
