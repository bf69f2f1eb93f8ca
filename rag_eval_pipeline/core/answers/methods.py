"""Answer correctness for a batch of answers, every method at once: the entry point of the asset.

One embedding call for the batch, one ``judge_all`` (one estimate, one budget check) for the rows the
hybrid sends to the judge, and every per-row metric through ``guarded``: an exception in one metric
of one row marks only that outcome failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from ..embedding.base import Embedder
from ..progress import Progress, no_progress
from ..types import ChunkId, QuestionId
from .hybrid import DEFAULT_HYBRID_MARGIN, hybrid_outcome, needs_judge, uncertainty_band
from .judge import JudgeItem, LLMJudge
from .keyword import keyword_outcome
from .semantic import DEFAULT_FIXED_THRESHOLD, NO_REFERENCE, cosine_similarities, has_reference, verdict_from
from .threshold import ThresholdChoice
from .types import Answer, Judgement, MetricOutcome, guarded


@dataclass(frozen=True)
class ScoringItem:
    """An answer with what its question's correctness is judged against."""

    question_id: QuestionId
    question: str
    answer: Answer
    reference_answer: str | None
    expected_keywords: tuple[str, ...]
    cited: tuple[tuple[ChunkId, str], ...] = ()


@dataclass(frozen=True)
class AnswerScores:
    """Every correctness outcome of one answer. ``hybrid_judgement`` is the judge's verdict where the
    hybrid asked for one (None elsewhere)."""

    question_id: QuestionId
    keyword: MetricOutcome
    semantic_similarity: MetricOutcome
    semantic_fixed: MetricOutcome
    semantic_dynamic: MetricOutcome
    hybrid: MetricOutcome
    hybrid_judgement: Judgement | None = None


def _no_answer(item: ScoringItem) -> AnswerScores:
    skipped = MetricOutcome.skipped(f"no answer: {item.answer.error or 'the answer failed'}")
    return AnswerScores(item.question_id, skipped, skipped, skipped, skipped, skipped)


def similarity_texts(items: Sequence[ScoringItem]) -> list[str]:
    """Every text ``score_answers`` embeds for these items (each answered item's answer and reference),
    each once: what a step that also embeds elsewhere announces to a ``PrefetchEmbedder``."""
    pairs = (
        (it.answer.text, it.reference_answer or "")
        for it in items
        if it.answer.status == "ok" and has_reference(it.reference_answer)
    )
    return list(dict.fromkeys(text for pair in pairs for text in pair))


def similarity_outcomes(embedder: Embedder, items: Sequence[ScoringItem]) -> list[MetricOutcome]:
    """Answer/reference similarity per item (skipped without a reference), from one embedding call.

    A failing embedding call fails the similarity of every row that needed it, with the error, so
    the keyword metric of the batch still stands.
    """
    wanted = [i for i, it in enumerate(items) if has_reference(it.reference_answer)]
    pairs = [(items[i].answer.text, items[i].reference_answer or "") for i in wanted]
    outcomes = [MetricOutcome.skipped(NO_REFERENCE) for _ in items]
    try:
        similarities = cosine_similarities(embedder, pairs)
    except Exception as exc:
        failed = MetricOutcome.failed(f"embedding failed: {type(exc).__name__}: {exc}")
        for i in wanted:
            outcomes[i] = failed
        return outcomes
    for i, similarity in zip(wanted, similarities, strict=True):
        outcomes[i] = MetricOutcome.ok(similarity)
    return outcomes


def score_answers(
    items: Sequence[ScoringItem],
    embedder: Embedder,
    *,
    fixed_threshold: float = DEFAULT_FIXED_THRESHOLD,
    threshold: ThresholdChoice,
    hybrid_margin: float = DEFAULT_HYBRID_MARGIN,
    judge: LLMJudge | None = None,
    budget_usd: float | None = None,
    progress: Progress = no_progress,
) -> list[AnswerScores]:
    """Scores per item, in input order.

    ``semantic_dynamic`` and the hybrid use ``threshold.threshold`` (fitted, or the fixed fallback);
    ``semantic_fixed`` uses ``fixed_threshold``. A failed answer gets skipped outcomes ("no answer:
    <error>"); an abstained answer is scored like any other (and so scores 0). ``BudgetExceeded``
    from the judge propagates before any request is sent.
    """
    uncertainty_band(threshold.threshold, hybrid_margin)  # a bad margin fails before any work
    progress("answer scoring", 0, len(items))
    answered = [i for i, it in enumerate(items) if it.answer.status == "ok"]
    similarity = dict(zip(answered, similarity_outcomes(embedder, [items[i] for i in answered]), strict=True))
    pass_score = judge.pass_score if judge is not None else None  # None: the hybrid is skipped
    dynamic_note = "fitted" if threshold.how == "fitted" else "fixed fallback"

    judgements: dict[int, Judgement] = {}
    to_judge = [
        i
        for i in answered
        if (value := similarity[i].value) is not None
        and similarity[i].status == "ok"
        and needs_judge(value, threshold.threshold, hybrid_margin)
    ]
    if judge is not None:  # called even with nothing to judge, so ``judge.last_estimate`` is this batch's
        judge_items = [
            JudgeItem(
                items[i].question_id,
                items[i].question,
                items[i].reference_answer or "",
                items[i].answer.text,
                items[i].cited,
            )
            for i in to_judge
        ]
        judgements = dict(zip(to_judge, judge.judge_all(judge_items, progress, budget_usd), strict=True))

    scores = []
    for i, item in enumerate(items):
        if item.answer.status != "ok":
            scores.append(_no_answer(item))
            continue
        sim = similarity[i]
        judgement = judgements.get(i)
        scores.append(
            AnswerScores(
                item.question_id,
                keyword=guarded(partial(keyword_outcome, item.answer.text, item.expected_keywords)),
                semantic_similarity=sim,
                semantic_fixed=guarded(partial(verdict_from, sim, fixed_threshold)),
                semantic_dynamic=guarded(partial(verdict_from, sim, threshold.threshold, dynamic_note)),
                hybrid=guarded(
                    partial(hybrid_outcome, sim, threshold.threshold, hybrid_margin, judgement, pass_score)
                ),
                hybrid_judgement=judgement,
            )
        )
    progress("answer scoring", len(items), len(items))
    return scores
