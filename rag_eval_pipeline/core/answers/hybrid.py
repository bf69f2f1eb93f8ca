"""Hybrid correctness: the cheap semantic verdict, and the LLM judge only where that verdict is unsure.

A similarity strictly inside ``(threshold - margin, threshold + margin)`` is too close to call, so the
judge decides (correct when its score >= its pass score); elsewhere the semantic verdict stands. The
band's edges are computed in decimal, so 0.85 with threshold 0.75 and margin 0.10 is outside, as it
reads. The outcome's detail names who decided: ``"semantic"`` or ``"judge"``. Without a judge the
hybrid is skipped, never quietly the semantic metric under another name.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from .types import Judgement, MetricOutcome

DEFAULT_HYBRID_MARGIN = 0.10
NO_JUDGE = "no judge LLM configured"
HybridRoute = Literal["semantic", "judge"]


def uncertainty_band(threshold: float, margin: float) -> tuple[float, float]:
    """The open interval of similarities the judge decides."""
    if margin < 0:
        raise ValueError(f"the hybrid margin must not be negative, got {margin}")
    t, m = Decimal(repr(threshold)), Decimal(repr(margin))
    return float(t - m), float(t + m)


def needs_judge(similarity: float, threshold: float, margin: float) -> bool:
    low, high = uncertainty_band(threshold, margin)
    return low < similarity < high


def hybrid_outcome(
    similarity: MetricOutcome,
    threshold: float,
    margin: float,
    judgement: Judgement | None,
    pass_score: float | None,
) -> MetricOutcome:
    """The hybrid verdict of one row.

    ``pass_score`` is the judge's pass mark, None when no judge is configured. ``judgement`` is only
    consulted for a row inside the band; such a row without one, or with a failed one, fails.
    """
    if pass_score is None:
        return MetricOutcome.skipped(NO_JUDGE)
    if similarity.status != "ok" or similarity.value is None:
        return similarity
    if not needs_judge(similarity.value, threshold, margin):
        return MetricOutcome.ok(1.0 if similarity.value >= threshold else 0.0, "semantic")
    if judgement is None:
        return MetricOutcome.failed("the similarity is within the margin but the answer was not judged")
    if judgement.status != "ok" or judgement.score is None:
        return MetricOutcome.failed(f"judge failed: {judgement.error}")
    return MetricOutcome.ok(1.0 if judgement.score >= pass_score else 0.0, "judge")
