"""Weighted Reciprocal Rank Fusion, in our own code so the keyword and vector engines stay swappable.

score(chunk) = sum over retrievers r that returned the chunk of weight_r / (rrf_k + rank_r(chunk)),
ranks 1-based (Cormack et al. 2009, with per-retriever weights). Ties go in document order
(core/retrieval/hit_order.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..settings.configs import Retriever
from ..types import ChunkId
from ..vector_store.base import ScoredChunk
from .hit_order import best_first

_SCORE_DECIMALS = 12


@dataclass(frozen=True)
class RankedList:
    """One retriever's hits for one query, best first."""

    retriever: Retriever
    weight: float
    hits: Sequence[ScoredChunk]


@dataclass(frozen=True)
class FusedHit:
    chunk: ScoredChunk
    score: float
    ranks: Mapping[Retriever, int]
    scores: Mapping[Retriever, float]


def weighted_rrf(lists: Sequence[RankedList], rrf_k: float) -> list[FusedHit]:
    """Every chunk any list returned, by fused score; each keeps its rank and score per retriever."""
    chunks: dict[ChunkId, ScoredChunk] = {}
    fused: dict[ChunkId, float] = {}
    ranks: dict[ChunkId, dict[Retriever, int]] = {}
    scores: dict[ChunkId, dict[Retriever, float]] = {}
    for ranked in lists:
        for rank, hit in enumerate(ranked.hits, start=1):
            if ranked.retriever in ranks.get(hit.chunk_id, {}):
                continue  # a retriever that lists a chunk twice counts its best rank only
            chunks.setdefault(hit.chunk_id, hit)
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + ranked.weight / (rrf_k + rank)
            ranks.setdefault(hit.chunk_id, {})[ranked.retriever] = rank
            scores.setdefault(hit.chunk_id, {})[ranked.retriever] = hit.score
    order = best_first(fused, lambda cid: fused[cid], lambda cid: chunks[cid], _SCORE_DECIMALS)
    return [FusedHit(chunks[cid], fused[cid], ranks[cid], scores[cid]) for cid in order]
