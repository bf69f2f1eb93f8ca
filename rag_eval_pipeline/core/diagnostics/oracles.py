"""Upper bounds on what a change could gain, per question, from what the evaluation already has.

- oracle ranking: the best recall any k chunks of this chunk set allow, best_k / |G|
  (``coverage.best_cover``): a perfect retriever over the same chunks. Also ``oracle_candidates``:
  the best k of the candidates this profile's retrievers found (a perfect fusion and reranking).
- oracle k: the smallest k' whose first k' chunks of the profile's ranking hold all the reference text
  the ranking holds (full recall when its candidates hold the whole reference), the ranking searched to
  ``ORACLE_K_DEPTH`` chunks per retriever (a reranking profile: its own candidates, as deep as it
  searches; reranking more would change what it is). ``oracle_k_recall`` is the recall there; the
  ranking's candidates include the returned chunks, so it is at least the span recall.
- oracle chunking (``oracle_chunking.py``): the reference spans as chunks, retrieved by the same profile.

Every bound is at least the actual span recall, by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..spans import ChunkLike, Interval, intersection_length, merge_intervals
from ..types import DocumentId

# How deep each retriever is searched for the oracle k (a fused profile's ranking holds up to twice).
ORACLE_K_DEPTH = 50


@dataclass(frozen=True)
class Oracles:
    """One question's bounds (recalls in [0, 1]); ``k`` None when the ranking holds no reference text."""

    ranking_recall: float
    candidates_recall: float
    chunking_recall: float
    reference_chunks_recall: float  # the replay with the reference spans as chunks, on its own
    k: int | None
    k_recall: float


def oracle_k(
    reference: Mapping[DocumentId, list[Interval]], ranking: Sequence[ChunkLike]
) -> tuple[int | None, int]:
    """(the smallest prefix of ``ranking`` holding the most reference characters the whole ranking
    holds, those characters); (None, 0) when it holds none."""
    held: list[ChunkLike] = []  # the chunks so far that hold reference text: only they change the count
    best, at = 0, None
    for position, chunk in enumerate(ranking, start=1):
        if not intersection_length(merge_intervals([chunk]), reference):
            continue
        held.append(chunk)
        characters = intersection_length(merge_intervals(held), reference)
        if characters > best:
            best, at = characters, position
    return at, best
