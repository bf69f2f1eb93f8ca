"""The hybrid's routing rule: the judge decides only strictly inside the band around the threshold."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.answers.hybrid import hybrid_outcome, needs_judge, uncertainty_band
from rag_eval_pipeline.core.answers.types import Judgement, MetricOutcome
from rag_eval_pipeline.core.types import QuestionId


def test_band_edges_are_exact_and_excluded():
    assert uncertainty_band(0.75, 0.10) == (0.65, 0.85)
    assert 0.85 - 0.75 < 0.10  # the float trap the decimal band avoids
    assert not needs_judge(0.85, 0.75, 0.10)
    assert not needs_judge(0.65, 0.75, 0.10)
    assert needs_judge(0.8499, 0.75, 0.10) and needs_judge(0.6501, 0.75, 0.10)
    assert not needs_judge(0.75, 0.75, 0.0)  # margin 0: the judge is never asked
    with pytest.raises(ValueError, match="must not be negative"):
        uncertainty_band(0.75, -0.1)


def test_outcomes():
    ok = Judgement(QuestionId("q"), "m", "ok", score=0.6)
    low = Judgement(QuestionId("q"), "m", "ok", score=0.4)
    failed = Judgement(QuestionId("q"), "m", "failed", error="invalid reply after 2 attempts: x")
    sim = MetricOutcome.ok
    assert hybrid_outcome(sim(0.9), 0.75, 0.1, low, 0.6) == MetricOutcome.ok(1.0, "semantic")
    assert hybrid_outcome(sim(0.5), 0.75, 0.1, ok, 0.6) == MetricOutcome.ok(0.0, "semantic")
    assert hybrid_outcome(sim(0.7), 0.75, 0.1, ok, 0.6) == MetricOutcome.ok(1.0, "judge")
    assert hybrid_outcome(sim(0.8), 0.75, 0.1, low, 0.6) == MetricOutcome.ok(0.0, "judge")
    assert hybrid_outcome(sim(0.7), 0.75, 0.1, failed, 0.6) == MetricOutcome.failed(
        "judge failed: invalid reply after 2 attempts: x"
    )
    assert hybrid_outcome(sim(0.7), 0.75, 0.1, None, 0.6).status == "failed"
    assert hybrid_outcome(sim(0.9), 0.75, 0.1, None, None) == MetricOutcome.skipped("no judge LLM configured")
    no_reference = MetricOutcome.skipped("no reference answer")
    assert hybrid_outcome(no_reference, 0.75, 0.1, None, 0.6) == no_reference
