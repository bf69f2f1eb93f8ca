"""How far each correctness method agrees with people: accuracy and Cohen's kappa on human labels.

Accuracy alone flatters a method on a lopsided label set (say "correct" to everything when 90% are
correct); kappa corrects for the agreement chance alone would give. Kappa is None where it is
undefined: when both raters give one and the same class everywhere, chance agreement is 1 and
``(p_o - p_e) / (1 - p_e)`` is 0/0 (scikit-learn returns NaN there). ``semantic_dynamic`` is
measured by k-fold cross-validation, each answer judged with a threshold fitted without it, so its
agreement is not flattered by having seen the labels it is compared with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import partial

from ..embedding.base import Embedder
from ..metrics.names import HYBRID, KEYWORD, LLM_JUDGE, SEMANTIC_DYNAMIC, SEMANTIC_FIXED
from ..progress import Progress, no_progress
from ..types import QuestionId
from .hybrid import DEFAULT_HYBRID_MARGIN, hybrid_outcome, uncertainty_band
from .judge import JudgeItem, LLMJudge
from .keyword import keyword_outcome
from .labels import HumanLabel
from .semantic import DEFAULT_FIXED_THRESHOLD, NO_REFERENCE, cosine_similarities, has_reference, verdict_from
from .threshold import (
    DEFAULT_FOLDS,
    DEFAULT_MIN_LABELS,
    THRESHOLD_GRID,
    ThresholdChoice,
    ThresholdObjective,
    cross_validated_thresholds,
    fit_threshold,
    fixed_threshold_choice,
)
from .types import EvaluationMethod, Judgement, MetricOutcome, guarded


@dataclass(frozen=True)
class Agreement:
    """One method against the labels: ``n`` rows compared; skipped and failed verdicts are left out
    and counted. ``accuracy`` is None when nothing was compared."""

    method: EvaluationMethod
    n: int
    n_skipped: int
    n_failed: int
    accuracy: float | None
    cohen_kappa: float | None


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters; None when undefined (no rows, or chance agreement 1)."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} verdicts against {len(b)} labels")
    n = len(a)
    if n == 0:
        return None
    observed = Fraction(sum(x == y for x, y in zip(a, b, strict=True)), n)
    pa, pb = Fraction(sum(a), n), Fraction(sum(b), n)
    chance = pa * pb + (1 - pa) * (1 - pb)
    if chance == 1:
        return None
    return float((observed - chance) / (1 - chance))


def agreement(
    method: EvaluationMethod, verdicts: Sequence[MetricOutcome], correct: Sequence[bool]
) -> Agreement:
    """Compare 0/1 verdicts (ok outcomes) with the labels, row by row."""
    if len(verdicts) != len(correct):
        raise ValueError(f"{len(verdicts)} verdicts for {len(correct)} labels")
    said: list[bool] = []
    truth: list[bool] = []
    skipped = failed = 0
    for verdict, label in zip(verdicts, correct, strict=True):
        if verdict.status == "skipped":
            skipped += 1
        elif verdict.status == "failed" or verdict.value is None:
            failed += 1
        else:
            said.append(verdict.value >= 0.5)
            truth.append(label)
    accuracy = sum(x == y for x, y in zip(said, truth, strict=True)) / len(said) if said else None
    return Agreement(method, len(said), skipped, failed, accuracy, cohen_kappa(said, truth))


@dataclass(frozen=True)
class LabelledQuestion:
    """What a labelled answer is measured against: its question's text, reference and keywords."""

    question: str
    reference_answer: str | None
    expected_keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgreementReport:
    """``threshold`` is fitted on all usable labels (the one to use from now on); ``fold_thresholds``
    are the cross-validation fits behind ``semantic_dynamic``'s (and the hybrid's) agreement."""

    threshold: ThresholdChoice
    agreements: tuple[Agreement, ...]
    fold_thresholds: tuple[ThresholdChoice, ...]

    def of(self, method: EvaluationMethod) -> Agreement:
        for entry in self.agreements:
            if entry.method == method:
                return entry
        raise KeyError(f"no agreement for {method!r} (llm_judge and hybrid need a judge)")


def _judge_verdict(judgement: Judgement, judge: LLMJudge) -> MetricOutcome:
    if judgement.status != "ok":
        return MetricOutcome.failed(f"judge failed: {judgement.error}")
    return MetricOutcome.ok(1.0 if judge.is_correct(judgement) else 0.0, f"judge score {judgement.score:g}")


def method_agreement(
    labels: Sequence[HumanLabel],
    questions: Mapping[QuestionId, LabelledQuestion],
    embedder: Embedder,
    *,
    fixed_threshold: float = DEFAULT_FIXED_THRESHOLD,
    objective: ThresholdObjective = "accuracy",
    min_labels: int = DEFAULT_MIN_LABELS,
    folds: int = DEFAULT_FOLDS,
    grid: Sequence[float] = THRESHOLD_GRID,
    judge: LLMJudge | None = None,
    hybrid_margin: float = DEFAULT_HYBRID_MARGIN,
    budget_usd: float | None = None,
    progress: Progress = no_progress,
    source: str = "the labels",
) -> AgreementReport:
    """Every method on the labelled answers against their labels.

    A label whose question is not in ``questions`` has no reference or keywords: its verdicts are
    skipped. With a judge, every labelled answer with a reference is judged in one ``judge_all``
    (one budget check; the chunks an answer cited are unknown here, so none are shown), and the
    hybrid reuses those judgements inside its band around each row's cross-validated threshold.
    """
    uncertainty_band(fixed_threshold, hybrid_margin)  # a bad margin fails before any work
    unknown = LabelledQuestion("", None)
    context = [questions.get(label.question_id, unknown) for label in labels]
    correct = [label.correct for label in labels]
    usable = [i for i, c in enumerate(context) if has_reference(c.reference_answer)]

    similarities = cosine_similarities(
        embedder, [(labels[i].answer, context[i].reference_answer or "") for i in usable]
    )
    usable_correct = [correct[i] for i in usable]
    overall = fit_threshold(
        similarities,
        usable_correct,
        objective=objective,
        fixed_threshold=fixed_threshold,
        min_labels=min_labels,
        grid=grid,
        source=source,
        n_left_out=len(labels) - len(usable),
    )
    keys = [f"{labels[i].question_id}\0{labels[i].answer}" for i in usable]
    row_thresholds, fold_choices = cross_validated_thresholds(
        similarities,
        usable_correct,
        keys,
        folds=folds,
        objective=objective,
        fixed_threshold=fixed_threshold,
        min_labels=min_labels,
        grid=grid,
    )

    similarity = [MetricOutcome.skipped(NO_REFERENCE) for _ in labels]
    # Rows without a reference keep the fixed threshold, unused: their similarity is skipped.
    cv_threshold = [fixed_threshold] * len(labels)
    for position, i in enumerate(usable):
        similarity[i] = MetricOutcome.ok(similarities[position])
        cv_threshold[i] = row_thresholds[position]

    verdicts: dict[EvaluationMethod, list[MetricOutcome]] = {
        KEYWORD: [
            guarded(partial(keyword_outcome, labels[i].answer, context[i].expected_keywords))
            for i in range(len(labels))
        ],
        SEMANTIC_FIXED: [
            guarded(partial(verdict_from, similarity[i], fixed_threshold)) for i in range(len(labels))
        ],
        SEMANTIC_DYNAMIC: [
            guarded(partial(verdict_from, similarity[i], cv_threshold[i], "cross-validated"))
            for i in range(len(labels))
        ],
    }
    if judge is not None:
        items = [
            JudgeItem(
                labels[i].question_id,
                context[i].question,
                context[i].reference_answer or "",
                labels[i].answer,
            )
            for i in usable
        ]
        judged = dict(zip(usable, judge.judge_all(items, progress, budget_usd), strict=True))
        verdicts[LLM_JUDGE] = [
            guarded(partial(_judge_verdict, judged[i], judge))
            if i in judged
            else MetricOutcome.skipped(NO_REFERENCE)
            for i in range(len(labels))
        ]
        verdicts[HYBRID] = [
            guarded(
                partial(
                    hybrid_outcome,
                    similarity[i],
                    cv_threshold[i],
                    hybrid_margin,
                    judged.get(i),
                    judge.pass_score,
                )
            )
            for i in range(len(labels))
        ]
    return AgreementReport(
        overall,
        tuple(agreement(method, outcomes, correct) for method, outcomes in verdicts.items()),
        fold_choices,
    )


def no_labels_report(
    fixed_threshold: float, why: str, objective: ThresholdObjective = "accuracy"
) -> AgreementReport:
    """Without labels nothing can be fitted or compared: the fixed threshold, with ``why``, and an
    empty agreement row per method, so a report always says what was used."""
    methods: tuple[EvaluationMethod, ...] = (KEYWORD, SEMANTIC_FIXED, SEMANTIC_DYNAMIC)
    return AgreementReport(
        fixed_threshold_choice(fixed_threshold, why, objective),
        tuple(Agreement(m, 0, 0, 0, None, None) for m in methods),
        (),
    )
