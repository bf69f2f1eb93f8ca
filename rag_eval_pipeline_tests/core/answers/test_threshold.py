"""Threshold fitting on human labels: grid, optimum, ties, F1, fallbacks with reasons, folds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.answers.threshold import (
    THRESHOLD_GRID,
    choose_threshold,
    cross_validated_thresholds,
    fit_threshold,
    fixed_threshold_choice,
    stratified_folds,
    threshold_grid,
)
from rag_eval_pipeline.core.types import QuestionId
from rag_eval_pipeline_tests.fakes import PlannedEmbedder

# Separable exactly at 0.70: every correct answer is above it, every wrong one below 0.70 but above 0.65.
SEPARABLE_SIMS = [0.71, 0.76, 0.80, 0.90, 0.95, 0.20, 0.40, 0.60, 0.66, 0.69]
SEPARABLE_LABELS = [True] * 5 + [False] * 5


def test_grid_is_exact_decimals():
    assert THRESHOLD_GRID == (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
    assert [repr(t) for t in THRESHOLD_GRID] == [
        "0.5", "0.55", "0.6", "0.65", "0.7", "0.75", "0.8", "0.85", "0.9",
    ]  # fmt: skip
    assert threshold_grid("0.1", "0.3", "0.1") == (0.1, 0.2, 0.3)  # 0.1 + 0.2 != 0.3 in floats
    with pytest.raises(ValueError, match="empty"):
        threshold_grid("0.9", "0.5", "0.05")


def test_known_optimum():
    choice = fit_threshold(SEPARABLE_SIMS, SEPARABLE_LABELS)
    assert (choice.threshold, choice.how, choice.objective, choice.score, choice.n) == (
        0.7,
        "fitted",
        "accuracy",
        1.0,
        10,
    )
    assert choice.reason == "fitted on 10 labelled answers: accuracy 1.000 at 0.70"
    assert dict(choice.grid_scores)[0.65] == 0.8  # 0.66 and 0.69 count as correct there
    assert [t for t, _ in choice.grid_scores] == list(THRESHOLD_GRID)


def test_ties_go_to_the_value_nearest_the_fixed_threshold_then_the_lower():
    sims = [0.92, 0.93, 0.94, 0.95, 0.96, 0.1, 0.2, 0.3, 0.4, 0.45]
    labels = [True] * 5 + [False] * 5  # every grid value is perfect
    assert fit_threshold(sims, labels).threshold == 0.75
    assert fit_threshold(sims, labels, fixed_threshold=0.725).threshold == 0.7  # equidistant: lower
    assert fit_threshold(sims, labels, fixed_threshold=0.775).threshold == 0.75
    plateau = [0.66, 0.67, 0.68, 0.69, 0.99, 0.1, 0.2, 0.3, 0.4, 0.54]  # perfect from 0.55 to 0.65
    assert fit_threshold(plateau, labels).threshold == 0.65
    assert fit_threshold(plateau, labels, fixed_threshold=0.5).threshold == 0.55


def test_f1_objective_prefers_recall_where_accuracy_does_not():
    sims = [0.52, 0.53, 0.54, 0.88, 0.51, 0.505, 0.56, 0.57, 0.10, 0.20, 0.30, 0.35]
    labels = [True] * 4 + [False] * 8
    accuracy = fit_threshold(sims, labels, objective="accuracy")
    f1 = fit_threshold(sims, labels, objective="f1")
    assert accuracy.reason == "fitted on 12 labelled answers: accuracy 0.750 at 0.75"  # plateau 0.60-0.85
    assert f1.reason == "fitted on 12 labelled answers: f1 0.667 at 0.50"
    assert dict(f1.grid_scores)[0.9] == 0.0  # no predicted positive: F1 0
    with pytest.raises(ValueError, match="unknown threshold objective 'recall'"):
        fit_threshold(sims, labels, objective="recall")  # type: ignore[arg-type]


def test_fallbacks_say_why_and_keep_the_fixed_threshold():
    few = fit_threshold([0.9, 0.1, 0.8], [True, False, True], source="labels.jsonl", n_left_out=2)
    assert (few.threshold, few.how, few.n, few.grid_scores) == (0.75, "fixed", 3, ())
    assert few.reason == (
        "only 3 labelled answers with a reference answer in labels.jsonl (2 without a reference "
        "answer left out), at least 10 needed to fit: fixed threshold 0.75"
    )
    assert few.score == 1.0  # the fixed threshold's accuracy on what labels there are

    one_class = fit_threshold([0.5 + i / 100 for i in range(12)], [True] * 12, source="labels.jsonl")
    assert one_class.how == "fixed"
    assert one_class.reason == (
        "all 12 labelled answers in labels.jsonl are correct (one class only, nothing to separate): "
        "fixed threshold 0.75"
    )
    none = fit_threshold([], [], fixed_threshold=0.8)
    assert (none.threshold, none.score, none.n) == (0.8, None, 0)
    assert none.reason == "no labelled answers with a reference answer in the labels: fixed threshold 0.80"
    assert fixed_threshold_choice(0.75, "no labels file configured").reason == (
        "no labels file configured: fixed threshold 0.75"
    )


def write_labels(path: Path, rows: list[tuple[str, str, int]]) -> Path:
    path.write_text(
        "\n".join(json.dumps({"question_id": q, "answer": a, "correct": c}) for q, a, c in rows) + "\n",
        encoding="utf-8",
    )
    return path


def test_choose_threshold_from_a_labels_file(tmp_path: Path):
    answers = [f"answer {i}" for i in range(len(SEPARABLE_SIMS))]
    rows = [(f"q{i}", answers[i], int(c)) for i, c in enumerate(SEPARABLE_LABELS)]
    rows.append(("q-unknown", "answer x", 1))  # no reference answer: left out, and said so
    path = write_labels(tmp_path / "labels.jsonl", rows)
    references = {QuestionId(f"q{i}"): f"reference {i % 3}" for i in range(len(answers))}
    embedder = PlannedEmbedder(references.values(), dict(zip(answers, SEPARABLE_SIMS, strict=True)))
    choice = choose_threshold(path, references, embedder)
    assert choice.threshold == 0.7
    assert choice.reason == (
        "fitted on 10 labelled answers (1 without a reference answer left out): accuracy 1.000 at 0.70"
    )
    assert len(embedder.calls) == 1

    missing = choose_threshold(tmp_path / "nope.jsonl", references, embedder)
    assert (missing.threshold, missing.how) == (0.75, "fixed")
    assert missing.reason == f"no labels file at {tmp_path / 'nope.jsonl'}: fixed threshold 0.75"
    assert choose_threshold(None, references, embedder).reason == (
        "no labels file configured: fixed threshold 0.75"
    )
    assert len(embedder.calls) == 1  # nothing embedded without labels


def test_folds_are_stratified_and_independent_of_input_order():
    labels = [True, False] * 5
    keys = [f"k{i}" for i in range(10)]
    folds = stratified_folds(labels, keys, 5)
    for fold in range(5):
        members = [labels[i] for i in range(10) if folds[i] == fold]
        assert sorted(members) == [False, True]
    order = [3, 7, 1, 9, 0, 2, 8, 6, 5, 4]
    shuffled = stratified_folds([labels[i] for i in order], [keys[i] for i in order], 5)
    assert [shuffled[order.index(i)] for i in range(10)] == folds
    with pytest.raises(ValueError, match="at least 2 folds"):
        stratified_folds(labels, keys, 1)


def test_cross_validated_thresholds_leave_each_row_out_of_its_own_fit():
    keys = [f"k{i:02d}" for i in range(10)]
    per_row, choices = cross_validated_thresholds(
        SEPARABLE_SIMS, SEPARABLE_LABELS, keys, folds=5, min_labels=4
    )
    folds = stratified_folds(SEPARABLE_LABELS, keys, 5)
    assert len(choices) == 5 and all(c.n == 8 and c.how == "fitted" for c in choices)
    assert per_row == [choices[f].threshold for f in folds]
    # Folds deal the rows sorted by (label, key): the wrong answers k05..k09 first, then k00..k04.
    assert folds == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    # Without 0.71 (k00, fold 0), 0.70 and 0.75 both fit the rest perfectly and 0.75 wins the tie:
    # k00 is then judged wrong, although the fit on all labels (0.70) would call it right.
    assert [c.threshold for c in choices] == [0.75, 0.7, 0.7, 0.7, 0.7]
    few, few_choices = cross_validated_thresholds(SEPARABLE_SIMS, SEPARABLE_LABELS, keys, folds=5)
    assert set(few) == {0.75} and "at least 10 needed" in few_choices[0].reason
    assert cross_validated_thresholds([], [], []) == ([], ())
