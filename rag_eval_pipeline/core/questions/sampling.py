"""Quick mode's question sample: seeded, and stable when questions are added or removed."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import TypeVar

from .datasets import ChunkLevelDataset, TokenLevelDataset

D = TypeVar("D", TokenLevelDataset, ChunkLevelDataset)


def sample_questions(dataset: D, size: int, seed: int) -> D:
    """The ``size`` questions with the smallest sha256(seed:question_id), in dataset order.

    Ranking each question by its own hash (not by a shuffled position) keeps a question in or out of the
    sample whatever else is added to the dataset, so quick runs stay comparable as the dataset grows."""
    if size >= len(dataset):
        return dataset
    ranked = sorted(
        dataset.examples, key=lambda e: hashlib.sha256(f"{seed}:{e.question_id}".encode()).hexdigest()
    )
    chosen = {e.question_id for e in ranked[:size]}
    return replace(dataset, examples=tuple(e for e in dataset.examples if e.question_id in chosen))
