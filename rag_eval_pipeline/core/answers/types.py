"""What answer evaluation talks about: answers with their citations, per-row metric outcomes, judgements.

A metric for one row is an outcome, never a bare number: ``ok`` with a value, ``skipped`` (does not
apply, with the reason) or ``failed`` (an error, with its message). A failed metric is kept as a row
status so one bad row never fails a partition and never hides as a 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..metrics.names import HYBRID, KEYWORD, LLM_JUDGE, SEMANTIC_DYNAMIC, SEMANTIC_FIXED, EvaluationMethod
from ..types import ChunkId, QuestionId

EVALUATION_METHODS: tuple[EvaluationMethod, ...] = (
    KEYWORD,
    SEMANTIC_FIXED,
    SEMANTIC_DYNAMIC,
    LLM_JUDGE,
    HYBRID,
)

MetricStatus = Literal["ok", "skipped", "failed"]
Confidence = Literal["HIGH", "MEDIUM", "LOW"]
AnswerStatus = Literal["ok", "failed", "skipped"]


@dataclass(frozen=True)
class MetricOutcome:
    """One metric of one row. ``detail`` is the reason for skipped/failed, or a short note for ok."""

    value: float | None
    status: MetricStatus
    detail: str = ""

    @classmethod
    def ok(cls, value: float, detail: str = "") -> MetricOutcome:
        return cls(float(value), "ok", detail)

    @classmethod
    def skipped(cls, reason: str) -> MetricOutcome:
        return cls(None, "skipped", reason)

    @classmethod
    def failed(cls, error: str) -> MetricOutcome:
        return cls(None, "failed", error)


def guarded(compute: Callable[[], MetricOutcome]) -> MetricOutcome:
    """Run one metric for one row; an exception becomes that metric's ``failed`` outcome with its
    message, so the other metrics and rows are still computed and the failure stays visible."""
    try:
        return compute()
    except Exception as exc:  # recorded as the row's failure, never swallowed
        return MetricOutcome.failed(f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Answer:
    """An answer to one question built from its retrieved chunks.

    ``cited_chunk_ids`` are the retrieved chunks the answer cites, in order of first citation;
    ``invalid_citations`` are cited ids that were not among the retrieved chunks (a hallucinated
    citation). ``answerer`` names what answered (an LLM model id, or ``extractive:<embedder>``).
    A failed answer (the LLM call failed after its retries) keeps its row with ``status='failed'``; an
    answer not built (``NoAnswers``) keeps it with ``status='skipped'``; ``error`` says why.
    """

    question_id: QuestionId
    text: str
    cited_chunk_ids: tuple[ChunkId, ...]
    invalid_citations: tuple[str, ...]
    confidence: Confidence | None
    abstained: bool
    answerer: str
    status: AnswerStatus = "ok"
    error: str = ""


# The judge's overall score is one of these; anything else is an invalid reply, asked again.
JUDGE_SCORES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
JUDGE_CRITERIA = ("semantic_coverage", "factual_coverage", "hallucination", "citation_accuracy")


@dataclass(frozen=True)
class Criterion:
    """One judged aspect in [0, 1] with the judge's short reason. For ``hallucination`` 0 means none
    (higher is worse); for the others higher is better."""

    score: float
    explanation: str


@dataclass(frozen=True)
class Judgement:
    """An LLM judge's verdict on one answer, or why there is none (``status='failed'``, never a 0)."""

    question_id: QuestionId
    judge_model: str
    status: AnswerStatus
    score: float | None = None
    semantic_coverage: Criterion | None = None
    factual_coverage: Criterion | None = None
    hallucination: Criterion | None = None
    citation_accuracy: Criterion | None = None
    error: str = ""
    attempts: int = 0
