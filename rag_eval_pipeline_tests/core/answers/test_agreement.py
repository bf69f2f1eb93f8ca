"""Agreement with human labels: kappa against scikit-learn, and every method on a labelled set."""

from __future__ import annotations

import json
import math
import random
import warnings
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from rag_eval_pipeline.core.answers.agreement import (
    Agreement,
    LabelledQuestion,
    agreement,
    cohen_kappa,
    method_agreement,
)
from rag_eval_pipeline.core.answers.judge import LLMJudge
from rag_eval_pipeline.core.answers.labels import HumanLabel
from rag_eval_pipeline.core.answers.threshold import cross_validated_thresholds, fit_threshold
from rag_eval_pipeline.core.answers.types import MetricOutcome
from rag_eval_pipeline.core.types import QuestionId
from rag_eval_pipeline_tests.fakes import PlannedEmbedder
from rag_eval_pipeline_tests.openai_server import openai_server, scripted_client


def test_kappa_matches_scikit_learn():
    rng = random.Random(7)
    undefined = 0
    for _ in range(300):
        n = rng.randint(1, 12)
        bias = rng.random()
        a = [rng.random() < bias for _ in range(n)]
        b = [x if rng.random() < 0.7 else rng.random() < bias for x in a]
        ours = cohen_kappa(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sklearn warns where kappa is undefined
            theirs = cohen_kappa_score(a, b)
        if math.isnan(theirs):
            undefined += 1
            assert ours is None
        else:
            assert ours == pytest.approx(theirs, abs=1e-12)
    assert undefined > 0  # the undefined case was compared too
    assert cohen_kappa([True] * 4, [True] * 4) is None  # one class everywhere: undefined
    assert cohen_kappa([True] * 4, [True, True, False, True]) == 0.0  # a constant rater earns nothing
    assert cohen_kappa([], []) is None


def test_agreement_leaves_out_and_counts_skipped_and_failed_verdicts():
    verdicts = [
        MetricOutcome.ok(1.0),
        MetricOutcome.ok(0.0),
        MetricOutcome.ok(1.0),
        MetricOutcome.skipped("no reference answer"),
        MetricOutcome.failed("judge failed: x"),
    ]
    result = agreement("semantic_fixed", verdicts, [True, False, False, True, True])
    assert result == Agreement(
        "semantic_fixed", 3, 1, 1, 2 / 3, cohen_kappa([True, False, True], [True, False, False])
    )
    assert agreement("keyword", [MetricOutcome.skipped("no expected keywords")], [True]) == Agreement(
        "keyword", 0, 1, 0, None, None
    )


# 20 labelled answers: the people call an answer correct from about 0.70 up, with two odd calls.
SIMS = [0.95, 0.91, 0.88, 0.84, 0.80, 0.78, 0.76, 0.73, 0.72, 0.66,
        0.69, 0.67, 0.64, 0.60, 0.55, 0.50, 0.40, 0.30, 0.20, 0.74]  # fmt: skip
CORRECT = [True] * 9 + [True] + [False] * 9 + [False]  # 0.66 labelled correct, 0.74 labelled wrong
REFERENCE = "Paris is France's capital city"


def labelled_set() -> tuple[list[HumanLabel], dict[QuestionId, LabelledQuestion], PlannedEmbedder]:
    labels = [
        HumanLabel(QuestionId(f"q{i:02d}"), f"answer {i:02d}{' Paris' if CORRECT[i] else ''}", CORRECT[i])
        for i in range(len(SIMS))
    ]
    labels.append(HumanLabel(QuestionId("q-unknown"), "answer x", True))  # no such question
    questions = {
        QuestionId(f"q{i:02d}"): LabelledQuestion(
            "What is the capital of France?", REFERENCE, ("Paris",) if i % 2 else ()
        )
        for i in range(len(SIMS))
    }
    embedder = PlannedEmbedder([REFERENCE], {labels[i].answer: s for i, s in enumerate(SIMS)})
    return labels, questions, embedder


def expected(method: str, said: list[bool], truth: list[bool], skipped: int) -> Agreement:
    accuracy = sum(x == y for x, y in zip(said, truth, strict=True)) / len(said)
    return Agreement(method, len(said), skipped, 0, accuracy, float(cohen_kappa_score(said, truth)))  # type: ignore[arg-type]


def test_method_agreement_cross_validates_the_dynamic_threshold():
    labels, questions, embedder = labelled_set()
    report = method_agreement(labels, questions, embedder, min_labels=8, source="labels.jsonl")
    assert len(embedder.calls) == 1
    assert report.threshold == fit_threshold(SIMS, CORRECT, min_labels=8, source="labels.jsonl", n_left_out=1)
    assert report.threshold.reason == (
        "fitted on 20 labelled answers (1 without a reference answer left out): accuracy 0.900 at 0.70"
    )
    assert [a.method for a in report.agreements] == ["keyword", "semantic_fixed", "semantic_dynamic"]

    fixed = [s >= 0.75 for s in SIMS]
    assert report.of("semantic_fixed") == expected("semantic_fixed", fixed, CORRECT, 1)

    keys = [f"{lb.question_id}\0{lb.answer}" for lb in labels[:20]]
    per_row, folds = cross_validated_thresholds(SIMS, CORRECT, keys, folds=5, min_labels=8)
    assert report.fold_thresholds == folds and len(folds) == 5
    dynamic = [s >= t for s, t in zip(SIMS, per_row, strict=True)]
    in_sample = [s >= report.threshold.threshold for s in SIMS]
    assert dynamic != in_sample  # the held-out fits do not all agree with the fit on everything
    assert report.of("semantic_dynamic") == expected("semantic_dynamic", dynamic, CORRECT, 1)

    # Keywords exist for odd questions only; correct answers (by construction) say "Paris".
    odd = [i for i in range(20) if i % 2]
    keyword = report.of("keyword")
    assert (keyword.n, keyword.n_skipped, keyword.accuracy, keyword.cohen_kappa) == (len(odd), 11, 1.0, 1.0)
    with pytest.raises(KeyError, match="need a judge"):
        report.of("llm_judge")


def test_method_agreement_with_a_judge(tmp_path: Path):
    labels, questions, embedder = labelled_set()

    def grade(body: dict) -> str:
        user = body["messages"][-1]["content"]
        score = 1.0 if "Paris\n\nChunks" in user else 0.0  # right exactly where the label says correct
        part = {"score": score, "explanation": "As the reference." if score else "Not the reference."}
        keys = ("semantic_coverage", "factual_coverage", "hallucination", "citation_accuracy")
        return json.dumps({"score": score, **{k: part for k in keys}})

    with openai_server() as (url, script):
        script.responder = grade
        judge = LLMJudge(scripted_client(url, tmp_path, max_attempts=None))
        report = method_agreement(labels, questions, embedder, min_labels=8, judge=judge, budget_usd=1.0)
    assert len(script.chat_requests) == 20  # every labelled answer with a reference, once
    assert judge.last_estimate is not None and judge.last_estimate.n_requests == 20
    assert report.of("llm_judge") == Agreement("llm_judge", 20, 1, 0, 1.0, 1.0)
    hybrid = report.of("hybrid")
    assert (hybrid.n, hybrid.n_skipped, hybrid.n_failed) == (20, 1, 0)
    # The judge is right everywhere, so the hybrid errs only outside the band where similarity decides.
    _, per_fold = cross_validated_thresholds(
        SIMS, CORRECT, [f"{lb.question_id}\0{lb.answer}" for lb in labels[:20]], min_labels=8
    )
    assert hybrid.accuracy == 1.0  # the two odd labels (0.66, 0.74) lie inside every fold's band
    assert all(0.60 <= c.threshold <= 0.80 for c in per_fold)


def test_method_agreement_without_labels():
    report = method_agreement([], {}, PlannedEmbedder([], {}))
    assert report.threshold.how == "fixed"
    assert (
        report.threshold.reason
        == "no labelled answers with a reference answer in the labels: fixed threshold 0.75"
    )
    assert all(a.n == 0 and a.accuracy is None for a in report.agreements)
