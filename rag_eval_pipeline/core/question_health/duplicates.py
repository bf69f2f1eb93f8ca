"""Near-duplicate questions: two questions whose embeddings' cosine is at or above a threshold ask the
same thing twice, so the set holds one question's evidence where it counts two.

The vectors are the ones the evaluation already has (the embedding cache, keyed by model and text):
nothing here calls a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..types import QuestionId

# Rows of the similarity matrix computed at once: memory stays at BLOCK x n floats for any n.
BLOCK = 1024


@dataclass(frozen=True)
class DuplicatePair:
    first: QuestionId  # the one listed first in the question set
    second: QuestionId
    cosine: float


@dataclass(frozen=True)
class NearDuplicates:
    """The pairs at or above ``threshold`` (highest cosine first, then in question order), and the
    groups they join: the connected components of the pairs, each question in exactly one group (a
    question without a near-duplicate is a group of its own), in question order."""

    threshold: float
    pairs: tuple[DuplicatePair, ...]
    groups: tuple[tuple[QuestionId, ...], ...]
    # each question's most similar other question and their cosine (None alone in the set)
    nearest: Mapping[QuestionId, tuple[QuestionId | None, float | None]]

    @property
    def questions_in_pairs(self) -> frozenset[QuestionId]:
        return frozenset(q for p in self.pairs for q in (p.first, p.second))

    def group_of(self) -> dict[QuestionId, int]:
        """Question -> the index of its group."""
        return {q: i for i, group in enumerate(self.groups) for q in group}


def near_duplicates(
    question_ids: Sequence[QuestionId], vectors: npt.NDArray[np.floating], threshold: float
) -> NearDuplicates:
    """Every pair of ``question_ids`` (one vector row each, in order) whose cosine is >= ``threshold``.
    The vectors are normalised here, so any embedder's do; a zero vector is similar to nothing."""
    n = len(question_ids)
    if vectors.shape[0] != n:
        raise ValueError(f"{vectors.shape[0]} vectors for {n} questions")
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True) if n else np.ones((0, 1))
    matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    found: list[tuple[int, int, float]] = []
    nearest: dict[QuestionId, tuple[QuestionId | None, float | None]] = {}
    for start in range(0, n, BLOCK):
        block = matrix[start : start + BLOCK] @ matrix.T
        for row, similarities in enumerate(block):
            i = start + row
            similarities[i] = -np.inf  # not its own duplicate
            if n > 1:
                j = int(np.argmax(similarities))  # the first of equals: question order decides
                nearest[question_ids[i]] = (question_ids[j], float(similarities[j]))
            else:
                nearest[question_ids[i]] = (None, None)
            for later in np.flatnonzero(similarities[i + 1 :] >= threshold) + i + 1:
                found.append((i, int(later), float(similarities[later])))
    found.sort(key=lambda p: (-p[2], p[0], p[1]))
    pairs = tuple(DuplicatePair(question_ids[i], question_ids[j], cosine) for i, j, cosine in found)
    return NearDuplicates(threshold, pairs, _groups(n, found, question_ids), nearest)


def _groups(
    n: int, pairs: Sequence[tuple[int, int, float]], question_ids: Sequence[QuestionId]
) -> tuple[tuple[QuestionId, ...], ...]:
    """Connected components (union-find), each listed in question order, ordered by its first member."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j, _ in pairs:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)
    members: dict[int, list[QuestionId]] = {}
    for i in range(n):
        members.setdefault(root(i), []).append(question_ids[i])
    return tuple(tuple(group) for _, group in sorted(members.items()))
