"""PLACEHOLDER for ``core/judging/agreement.py`` (written on another branch of issue 32): the lead replaces
the one import of this module (core/judging/annotation_source.py) with the real ``judge_agreement`` and
deletes this file.

Minimal on purpose: for every pair of judges, over the queries both judged (each judge's latest
judgement), Cohen's kappa on the relevance of the passages both read (a passage is relevant to a judge
when one of their spans lies in it) and the character overlap of their spans (characters both selected
/ characters either selected, over the queries both answered with spans).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from ..spans import intersection_length, merge_intervals, total_length
from .store import latest_judgements
from .types import Judgement, JudgeName


@dataclass(frozen=True)
class JudgeAgreement:
    judge_a: JudgeName
    judge_b: JudgeName
    queries: int  # judged by both
    passages: int  # passages both read, the units of kappa
    kappa: float | None  # None: no passage, or both judges gave every passage the same class
    span_overlap: float | None  # None: no query both answered with spans


def judge_agreement(judgements: Iterable[Judgement]) -> list[JudgeAgreement]:
    latest = latest_judgements(judgements)
    by_judge: dict[JudgeName, dict[str, Judgement]] = {}
    for judgement in latest:
        by_judge.setdefault(judgement.judge, {})[judgement.query_id] = judgement
    rows = []
    for a, b in combinations(sorted(by_judge), 2):
        shared = sorted(by_judge[a].keys() & by_judge[b].keys())
        if not shared:
            continue
        pairs: list[tuple[bool, bool]] = []
        both = either = 0
        for query_id in shared:
            ja, jb = by_judge[a][query_id], by_judge[b][query_id]
            for passage in sorted(set(ja.read) & set(jb.read)):
                pairs.append(
                    (any(s.overlaps(passage) for s in ja.spans), any(s.overlaps(passage) for s in jb.spans))
                )
            if ja.spans and jb.spans:
                ma, mb = merge_intervals(ja.spans), merge_intervals(jb.spans)
                shared_chars = intersection_length(ma, mb)
                both += shared_chars
                either += total_length(ma) + total_length(mb) - shared_chars
        rows.append(
            JudgeAgreement(
                a, b, len(shared), len(pairs), cohen_kappa(pairs), both / either if either else None
            )
        )
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
