"""Which questions can tell setups apart, and how many independent ones the set holds.

The leaderboard's tiers compare setups by their paired per-question differences in the objective (its
per-question metric, ``span_recall_1000t`` by default). A question every setup scores the same adds a
zero to every difference: it cannot separate any two setups. The plainest cases are the questions no
setup answers (the objective is 0 for every setup: no setup gets any of the reference into the context)
and those every setup answers fully (1 for every setup).

**Effective sample size**: the number of near-duplicate groups (``duplicates.py``: questions joined by a
cosine at or above the threshold count once) that hold at least one question some two setups score
differently. It is the count of independent questions that carry evidence for the ranking; with fewer
than two comparable setups nothing is known of separation and only near-duplicates are discounted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ..leaderboard.ranking import ConfiguredNames
from ..types import QuestionId
from .duplicates import NearDuplicates

# Scores this close are the same score (sums of character counts divided: exact in practice).
SAME = 1e-9

Setup = str  # "<chunk config> x <profile>"


@dataclass(frozen=True)
class SetupScores:
    """Per comparable setup, each question's objective; the metric; and the setups left out, each with
    why."""

    metric: str
    scores: Mapping[Setup, Mapping[QuestionId, float]]
    left_out: Mapping[Setup, str]


@dataclass(frozen=True)
class Separation:
    """``compared``: the questions every one of ``setups`` was evaluated on (all of them in full mode,
    quick mode's sample otherwise), in question order. The rest are subsets of it."""

    metric: str
    setups: tuple[Setup, ...]
    compared: tuple[QuestionId, ...]
    no_setup: tuple[QuestionId, ...]  # the objective is 0 for every setup
    every_setup: tuple[QuestionId, ...]  # the objective is 1 for every setup
    same_score: tuple[QuestionId, ...]  # every setup scores the same (the two above, and ties elsewhere)
    ranges: Mapping[QuestionId, tuple[float, float]]  # the lowest and highest score of each compared one

    @property
    def measured(self) -> bool:
        """Two setups at least: with one, every question "scores the same" and that says nothing."""
        return len(self.setups) >= 2

    @property
    def separating(self) -> frozenset[QuestionId]:
        return frozenset(self.compared) - frozenset(self.same_score)


def setup_scores(
    frames: Mapping[str, pd.DataFrame],
    metric: str,
    fallback_metric: str,
    dataset_sha256: str,
    configured: ConfiguredNames | None = None,
) -> SetupScores:
    """Each partition's per-question ``metric`` (the leaderboard's objective column; ``fallback_metric``
    when no table has it, as the leaderboard ranks tables written before it existed), for the setups
    comparable with each other: measured on the questions of ``dataset_sha256`` over the whole corpus,
    and still configured (``configured`` None: the config files could not be read)."""
    evaluated = {key: frame for key, frame in sorted(frames.items()) if not frame.empty}
    if not any(metric in f.columns and f[metric].notna().any() for f in evaluated.values()):
        metric = fallback_metric
    scores: dict[Setup, dict[QuestionId, float]] = {}
    left_out: dict[Setup, str] = {}
    for frame in evaluated.values():
        first = frame.iloc[0]
        setup = f"{first['chunk_config']} x {first['profile']}"
        reason = ""
        if str(first.get("dataset_sha256", "")) != dataset_sha256:
            reason = "measured on other questions"
        elif str(first.get("document_scope", "") or ""):
            reason = "its chunk config covers some documents only"
        elif configured is not None and configured.removal(str(first["chunk_config"]), str(first["profile"])):
            reason = configured.removal(str(first["chunk_config"]), str(first["profile"]))
        elif metric not in frame.columns:
            reason = f"no {metric}"
        if reason:
            left_out[setup] = reason
            continue
        values = frame[["question_id", metric]].dropna()
        scores[setup] = {
            QuestionId(str(q)): float(v) for q, v in zip(values["question_id"], values[metric], strict=True)
        }
    return SetupScores(metric, scores, left_out)


def separation(scores: SetupScores, question_ids: Sequence[QuestionId]) -> Separation:
    """Which of ``question_ids`` no setup, every setup, or every setup alike answers."""
    setups = tuple(sorted(scores.scores))
    compared = tuple(q for q in question_ids if setups and all(q in scores.scores[s] for s in setups))
    ranges = {
        q: (min(scores.scores[s][q] for s in setups), max(scores.scores[s][q] for s in setups))
        for q in compared
    }
    return Separation(
        scores.metric,
        setups,
        compared,
        tuple(q for q in compared if ranges[q][1] <= SAME),
        tuple(q for q in compared if ranges[q][0] >= 1 - SAME),
        tuple(q for q in compared if ranges[q][1] - ranges[q][0] <= SAME),
        ranges,
    )


def effective_sample_size(
    question_ids: Sequence[QuestionId], duplicates: NearDuplicates, separated: Separation
) -> int:
    """The near-duplicate groups holding a question that separates setups (see the module); without
    two setups, the near-duplicate groups of ``question_ids``."""
    informative = separated.separating if separated.measured else frozenset(question_ids)
    return sum(1 for group in duplicates.groups if informative.intersection(group))
