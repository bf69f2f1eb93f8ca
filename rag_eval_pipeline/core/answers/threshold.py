"""The similarity threshold for ``semantic_dynamic``: fitted on human labels, or the fixed one and why.

The grid runs 0.50 to 0.90 in steps of 0.05, built from decimals so every value is the float nearest
its decimal (0.7, not 0.7000000000000001). Scores are exact fractions, so equal scores are really
equal; ties go to the grid value nearest the fixed threshold, then to the lower one (a threshold
that moves only for a real gain, and then the more lenient one). Without usable labels the fixed
threshold is used and the choice says why: labels are never invented from another metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Literal, get_args

from ..embedding.base import Embedder
from ..types import QuestionId
from .labels import load_labels
from .semantic import DEFAULT_FIXED_THRESHOLD, cosine_similarities, format_threshold, has_reference

ThresholdObjective = Literal["accuracy", "f1"]
ThresholdHow = Literal["fitted", "fixed"]
THRESHOLD_OBJECTIVES: tuple[ThresholdObjective, ...] = get_args(ThresholdObjective)
DEFAULT_MIN_LABELS = 10
DEFAULT_FOLDS = 5


def threshold_grid(start: str = "0.50", stop: str = "0.90", step: str = "0.05") -> tuple[float, ...]:
    """``start`` to ``stop`` inclusive, stepped in decimal arithmetic (no accumulated float drift)."""
    first, last, size = Decimal(start), Decimal(stop), Decimal(step)
    if size <= 0 or last < first:
        raise ValueError(f"threshold grid {start}..{stop} step {step} is empty")
    count = int((last - first) / size)
    return tuple(float(first + size * i) for i in range(count + 1))


THRESHOLD_GRID = threshold_grid()


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold ``semantic_dynamic`` uses and how it came about.

    ``score`` is the objective at ``threshold`` on the ``n`` usable labels (None without labels, or
    when F1 is undefined); ``grid_scores`` holds ``(threshold, score)`` for every grid value tried
    (empty when nothing was fitted).
    """

    threshold: float
    how: ThresholdHow
    reason: str
    objective: ThresholdObjective
    score: float | None
    n: int
    grid_scores: tuple[tuple[float, float], ...] = ()


def objective_score(
    similarities: Sequence[float], correct: Sequence[bool], threshold: float, objective: ThresholdObjective
) -> Fraction | None:
    """Accuracy or F1 (of the class "correct") of ``similarity >= threshold`` against the labels."""
    if len(similarities) != len(correct):
        raise ValueError(f"{len(similarities)} similarities for {len(correct)} labels")
    if not correct:
        return None
    predicted = [s >= threshold for s in similarities]
    if objective == "accuracy":
        return Fraction(sum(p == c for p, c in zip(predicted, correct, strict=True)), len(correct))
    if objective == "f1":
        tp = sum(p and c for p, c in zip(predicted, correct, strict=True))
        fp = sum(p and not c for p, c in zip(predicted, correct, strict=True))
        fn = sum(c and not p for p, c in zip(predicted, correct, strict=True))
        return Fraction(2 * tp, 2 * tp + fp + fn) if tp + fp + fn else None
    raise ValueError(
        f"unknown threshold objective {objective!r}; use one of {', '.join(THRESHOLD_OBJECTIVES)}"
    )


def _fixed(
    fixed_threshold: float,
    why: str,
    objective: ThresholdObjective,
    similarities: Sequence[float] = (),
    correct: Sequence[bool] = (),
) -> ThresholdChoice:
    score = objective_score(similarities, correct, fixed_threshold, objective)
    return ThresholdChoice(
        fixed_threshold,
        "fixed",
        f"{why}: fixed threshold {format_threshold(fixed_threshold)}",
        objective,
        None if score is None else float(score),
        len(correct),
    )


def fixed_threshold_choice(
    fixed_threshold: float, why: str, objective: ThresholdObjective = "accuracy"
) -> ThresholdChoice:
    """The fixed threshold, with ``why`` no fit happened (``"no labels file configured"``)."""
    return _fixed(fixed_threshold, why, objective)


def fit_threshold(
    similarities: Sequence[float],
    correct: Sequence[bool],
    *,
    objective: ThresholdObjective = "accuracy",
    fixed_threshold: float = DEFAULT_FIXED_THRESHOLD,
    min_labels: int = DEFAULT_MIN_LABELS,
    grid: Sequence[float] = THRESHOLD_GRID,
    source: str = "the labels",
    n_left_out: int = 0,
) -> ThresholdChoice:
    """The grid threshold that best reproduces the labels, or the fixed one when they cannot tell.

    ``similarities[i]`` is the answer/reference similarity of the answer labelled ``correct[i]``;
    ``n_left_out`` counts labels that could not be used (no reference answer), for the reason text.
    """
    if objective not in THRESHOLD_OBJECTIVES:
        raise ValueError(
            f"unknown threshold objective {objective!r}; use one of {', '.join(THRESHOLD_OBJECTIVES)}"
        )
    if min_labels < 1:
        raise ValueError(f"min_labels must be at least 1, got {min_labels}")
    if not grid:
        raise ValueError("the threshold grid is empty")
    n = len(correct)
    left_out = f" ({n_left_out} without a reference answer left out)" if n_left_out else ""
    if n == 0:
        return _fixed(
            fixed_threshold, f"no labelled answers with a reference answer in {source}{left_out}", objective
        )
    if n < min_labels:
        return _fixed(
            fixed_threshold,
            f"only {n} labelled answers with a reference answer in {source}{left_out}, "
            f"at least {min_labels} needed to fit",
            objective,
            similarities,
            correct,
        )
    if len(set(correct)) == 1:
        kind = "correct" if correct[0] else "not correct"
        return _fixed(
            fixed_threshold,
            f"all {n} labelled answers in {source} are {kind} (one class only, nothing to separate)",
            objective,
            similarities,
            correct,
        )
    scored: list[tuple[float, Fraction]] = []
    for threshold in grid:
        score = objective_score(similarities, correct, threshold, objective)
        assert score is not None  # both classes are present, so F1 has a denominator
        scored.append((threshold, score))
    fixed = Decimal(repr(fixed_threshold))
    best, best_score = min(scored, key=lambda ts: (-ts[1], abs(Decimal(repr(ts[0])) - fixed), ts[0]))
    return ThresholdChoice(
        best,
        "fitted",
        f"fitted on {n} labelled answers{left_out}: {objective} {float(best_score):.3f} "
        f"at {format_threshold(best)}",
        objective,
        float(best_score),
        n,
        tuple((t, float(s)) for t, s in scored),
    )


def stratified_folds(correct: Sequence[bool], keys: Sequence[str], folds: int) -> list[int]:
    """A fold number per row: rows sorted by (label, key) and dealt round-robin, so every fold gets
    a fair share of each class and the split never depends on input order or a random seed."""
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
    order = sorted(range(len(correct)), key=lambda i: (correct[i], keys[i], i))
    assignment = [0] * len(correct)
    for rank, i in enumerate(order):
        assignment[i] = rank % folds
    return assignment


def cross_validated_thresholds(
    similarities: Sequence[float],
    correct: Sequence[bool],
    keys: Sequence[str],
    *,
    folds: int = DEFAULT_FOLDS,
    objective: ThresholdObjective = "accuracy",
    fixed_threshold: float = DEFAULT_FIXED_THRESHOLD,
    min_labels: int = DEFAULT_MIN_LABELS,
    grid: Sequence[float] = THRESHOLD_GRID,
) -> tuple[list[float], tuple[ThresholdChoice, ...]]:
    """For every row, the threshold fitted WITHOUT its fold (so its verdict is not in-sample), and
    the choice made for each fold. With fewer rows than folds, every row is its own fold."""
    n = len(correct)
    if n == 0:
        return [], ()
    k = min(folds, n) if n >= 2 else 2
    assignment = stratified_folds(correct, keys, k)
    choices = []
    for fold in range(k):
        train = [i for i in range(n) if assignment[i] != fold]
        choices.append(
            fit_threshold(
                [similarities[i] for i in train],
                [correct[i] for i in train],
                objective=objective,
                fixed_threshold=fixed_threshold,
                min_labels=min_labels,
                grid=grid,
                source=f"the folds other than {fold + 1} of {k}",
            )
        )
    return [choices[assignment[i]].threshold for i in range(n)], tuple(choices)


def choose_threshold(
    labels_path: str | Path | None,
    reference_answers: Mapping[QuestionId, str | None],
    embedder: Embedder,
    *,
    objective: ThresholdObjective = "accuracy",
    fixed_threshold: float = DEFAULT_FIXED_THRESHOLD,
    min_labels: int = DEFAULT_MIN_LABELS,
    grid: Sequence[float] = THRESHOLD_GRID,
) -> ThresholdChoice:
    """The threshold from the labels file at ``labels_path`` (``LabelsError`` when it is malformed).

    A missing file is not an error: labelling is optional, and the choice says the fixed threshold
    is used because there is none. Labels whose question has no reference answer cannot be used.
    """
    if labels_path is None:
        return _fixed(fixed_threshold, "no labels file configured", objective)
    path = Path(labels_path)
    if not path.is_file():
        return _fixed(fixed_threshold, f"no labels file at {path}", objective)
    labels = load_labels(path)
    usable = [lb for lb in labels if has_reference(reference_answers.get(lb.question_id))]
    similarities = cosine_similarities(
        embedder, [(lb.answer, reference_answers[lb.question_id] or "") for lb in usable]
    )
    return fit_threshold(
        similarities,
        [lb.correct for lb in usable],
        objective=objective,
        fixed_threshold=fixed_threshold,
        min_labels=min_labels,
        grid=grid,
        source=str(path),
        n_left_out=len(labels) - len(usable),
    )
