"""Chunk-level (ID-based) retrieval metrics of one question, with binary relevance.

A retriever may return the same chunk twice; repeats are dropped before ranking (the first occurrence
keeps its place), so a duplicate neither scores twice nor takes a slot in the top k.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..types import ChunkId

__all__ = ["ChunkMetrics", "chunk_metrics"]


@dataclass(frozen=True)
class ChunkMetrics:
    """One question's chunk-level metrics; ret = the deduplicated ranking, gt = the relevant chunks:

        recall            = |ret ∩ gt| / |gt|
        precision         = |ret ∩ gt| / |ret|
        f1                = 2 × precision × recall / (precision + recall)
        recall_at_k       = |ret[:k] ∩ gt| / |gt|
        hit_at_k          = 1 if ret[:k] ∩ gt else 0
        mrr               = 1 / the rank of the first relevant chunk
        ndcg_at_k         = DCG(ret[:k]) / DCG(the ideal top k), DCG = Σ 1 / log2(rank + 1) over relevant ranks
        average_precision = Σ precision@rank over relevant ranks / |gt|

    Binary gains; a retrieval without a relevant chunk scores 0 on each."""

    recall: float
    precision: float
    f1: float
    recall_at_k: float
    hit_at_k: float
    mrr: float
    ndcg_at_k: float
    average_precision: float


def _dedupe(ids: Iterable[ChunkId]) -> list[ChunkId]:
    return list(dict.fromkeys(ids))


def _dcg(relevances: Iterable[bool]) -> float:
    return sum(1.0 / math.log2(rank + 1) for rank, rel in enumerate(relevances, start=1) if rel)


def chunk_metrics(retrieved_ids: Sequence[ChunkId], relevant_ids: Iterable[ChunkId], k: int) -> ChunkMetrics:
    """Score a ranked retrieval against the set of relevant chunk IDs.

    recall, precision, f1, MRR and average precision use the whole (deduplicated) ranking; the ``_at_k``
    metrics use its first ``k`` entries. Raises ``ValueError`` for ``k <= 0`` or no relevant ID.
    """
    if k <= 0:
        raise ValueError(f"k must be a positive number of retrieved chunks, got {k}")
    relevant = set(relevant_ids)
    if not relevant:
        raise ValueError("a question needs at least one relevant chunk id to be scored")
    ranking = _dedupe(retrieved_ids)
    is_rel = [chunk_id in relevant for chunk_id in ranking]
    top_k = is_rel[:k]

    hits = sum(is_rel)
    recall = hits / len(relevant)
    precision = hits / len(ranking) if ranking else 0.0
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0

    first = next((rank for rank, rel in enumerate(is_rel, start=1) if rel), None)
    ideal = _dcg([True] * min(len(relevant), k))
    precisions_at_hits = []
    seen = 0
    for rank, rel in enumerate(is_rel, start=1):
        if rel:
            seen += 1
            precisions_at_hits.append(seen / rank)

    return ChunkMetrics(
        recall=recall,
        precision=precision,
        f1=f1,
        recall_at_k=sum(top_k) / len(relevant),
        hit_at_k=1.0 if any(top_k) else 0.0,
        mrr=1.0 / first if first is not None else 0.0,
        ndcg_at_k=_dcg(top_k) / ideal,
        average_precision=sum(precisions_at_hits) / len(relevant),
    )
