"""PLACEHOLDER for ``core/judging/agreement.py`` (written on another branch of issue 32, with
``agreement(judge_views(judgements), pool) -> list[PairAgreement]``): the lead replaces the one call of
this module (``AnnotationSource._pair_agreements`` in core/judging/annotation_source.py) with the real
one and deletes this file and its test.

It has the real one's shape (``judge_a``, ``judge_b``, ``n_queries``, ``kappa``, ``span_iou``,
``describe()``), kept minimal: for every pair of judges, over the queries both judged (each judge's
latest judgement), Cohen's kappa on the relevance of the passages both read (relevant to a judge when
one of their spans lies in it) and the mean character overlap (IoU) of their spans over the queries
where either selected one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from ..spans import intersection_length, merge_intervals, total_length
from .store import latest_judgements
from .types import Judgement, JudgeName


@dataclass(frozen=True)
class PairAgreement:
    judge_a: JudgeName
    judge_b: JudgeName
    n_queries: int  # judged by both
    n_passages: int  # passages both read, the items of kappa
    kappa: float | None  # None: no passage, or both judges put every passage in one class
    span_iou: float | None  # None: no query where either selected a span
    n_span_queries: int

    def describe(self) -> str:
        kappa = "undefined" if self.kappa is None else f"{self.kappa:.2f}"
        iou = "no span selected" if self.span_iou is None else f"{self.span_iou:.2f}"
        return (
            f"{self.judge_a} / {self.judge_b}: {self.n_queries} queries both judged, kappa {kappa} over "
            f"{self.n_passages} passages both read, span overlap (IoU) {iou} over {self.n_span_queries} queries"
        )


def judge_agreement(judgements: Iterable[Judgement]) -> list[PairAgreement]:
    by_judge: dict[JudgeName, dict[str, Judgement]] = {}
    for judgement in latest_judgements(judgements):
        by_judge.setdefault(judgement.judge, {})[judgement.query_id] = judgement
    rows = []
    for a, b in combinations(sorted(by_judge), 2):
        shared = sorted(by_judge[a].keys() & by_judge[b].keys())
        if not shared:
            continue
        pairs: list[tuple[bool, bool]] = []
        ious: list[float] = []
        for query_id in shared:
            ja, jb = by_judge[a][query_id], by_judge[b][query_id]
            for passage in sorted(set(ja.read) & set(jb.read)):
                pairs.append(
                    (any(s.overlaps(passage) for s in ja.spans), any(s.overlaps(passage) for s in jb.spans))
                )
            ma, mb = merge_intervals(ja.spans), merge_intervals(jb.spans)
            both = intersection_length(ma, mb)
            either = total_length(ma) + total_length(mb) - both
            if either:
                ious.append(both / either)
        iou = sum(ious) / len(ious) if ious else None
        rows.append(PairAgreement(a, b, len(shared), len(pairs), cohen_kappa(pairs), iou, len(ious)))
    return rows


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """(observed - chance agreement) / (1 - chance agreement) over binary labels."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(1 for x, y in pairs if x == y) / n
    yes_a = sum(1 for x, _ in pairs if x) / n
    yes_b = sum(1 for _, y in pairs if y) / n
    chance = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    return None if chance == 1 else (observed - chance) / (1 - chance)
