"""Upper bounds on what a change could gain, per question, from what the evaluation already has.

- oracle ranking: the best recall any k chunks of this chunk set allow, best_k / |G|
  (``coverage.best_cover``): a perfect retriever over the same chunks. Also ``oracle_candidates``:
  the best k of the candidates this profile's retrievers found (a perfect fusion and reranking).
- oracle k: the smallest k' at which the profile with top_k = k' returns the most reference text it
  returns at any k' up to ``ORACLE_K_DEPTH`` (full recall when its candidates hold the whole reference);
  ``oracle_k_recall`` is that recall, at least the span recall (k' = top_k is among them). Computed from
  one replay searched ``ORACLE_K_DEPTH`` deep (``ranking_at``): a single-retriever profile's top k' is
  the first k' of its list; a fused one fuses each retriever's first ``candidate_depth(k')``, exactly as
  the profile with that top_k would. A reranking profile is taken as it ranks: k' within its rerank pool
  (reranking other pools would be another run of the cross-encoder).
- oracle chunking (``oracle_chunking.py``): the reference spans as chunks, retrieved by the same profile.

Every bound is at least the actual span recall, by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..retrieval.fusion import RankedList, weighted_rrf
from ..retrieval.stages import StageLists
from ..settings.configs import RetrievalProfile
from ..spans import ChunkLike, Interval, intersection_length, merge_intervals
from ..types import DocumentId
from ..vector_store.base import ScoredChunk

# The largest k the oracle k looks at (each retriever is searched candidate_depth for it deep).
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


def ranking_at(profile: RetrievalProfile, searched: StageLists, k: int) -> list[ScoredChunk]:
    """What ``profile`` with top_k = ``k`` returns (no reranker), from ``searched``: its stage lists
    with each retriever searched at least ``candidate_depth`` for that k deep. The first d of a search
    are what a search d deep returns (exact, ties in document order), and the threshold keeps a prefix."""
    return _ranked_candidates(profile, searched, _depth(profile, k))[:k]


def _depth(profile: RetrievalProfile, k: int) -> int:
    """How deep each retriever searches for the profile with top_k = ``k``."""
    return replace(profile, top_k=k, rerank_depth=max(profile.rerank_depth, k)).candidate_depth


def _ranked_candidates(profile: RetrievalProfile, searched: StageLists, depth: int) -> list[ScoredChunk]:
    """Every candidate of each retriever's first ``depth``, in the profile's order."""
    lists = []
    if searched.dense is not None:
        lists.append(RankedList("knn", profile.vector_weight, searched.dense[:depth]))
    if searched.keyword is not None:
        lists.append(RankedList("bm25", profile.keyword_weight, searched.keyword[:depth]))
    if profile.is_fused:
        return [h.chunk for h in weighted_rrf(lists, profile.rrf_k)]
    (only,) = lists
    return list(only.hits)


def oracle_k(
    reference: Mapping[DocumentId, list[Interval]], profile: RetrievalProfile, searched: StageLists
) -> tuple[int | None, int]:
    """(the oracle k, the reference characters the profile returns there); (None, 0) when it returns
    none at any k' (see the module). ``searched``: the lists ``ORACLE_K_DEPTH`` deep, or a reranking
    profile's own."""
    if profile.reranker is not None:
        return _smallest_prefix(reference, [h.chunk for h in searched.reranked or ()])
    if not profile.is_fused:
        return _smallest_prefix(reference, [h.chunk for h in searched.fused][:ORACLE_K_DEPTH])
    # every candidate any k' could return: no k' returns more, so reaching it ends the search
    ceiling = _held(reference, [h.chunk for h in searched.fused])
    best, at = 0, None
    # by depth (k up to 10 share one: FUSION_CANDIDATES), only the chunks holding reference text with
    # their positions: the others add nothing to a prefix, and merging every chunk of each of up to 50
    # prefixes was most of the oracle's cost
    ranked: dict[int, list[tuple[int, ScoredChunk]]] = {}
    for k in range(1, ORACLE_K_DEPTH + 1):
        depth = _depth(profile, k)
        if depth not in ranked:
            ranked[depth] = [
                (position, chunk)
                for position, chunk in enumerate(_ranked_candidates(profile, searched, depth))
                if _holds(reference, chunk)
            ]
        held = _held(reference, [chunk for position, chunk in ranked[depth] if position < k])
        if held > best:
            best, at = held, k
        if best == ceiling:
            break
    return at, best


def _held(reference: Mapping[DocumentId, list[Interval]], chunks: Sequence[ChunkLike]) -> int:
    return intersection_length(merge_intervals(chunks), reference)


def _holds(reference: Mapping[DocumentId, list[Interval]], chunk: ChunkLike) -> bool:
    """Whether ``chunk`` holds a character of ``reference``."""
    return chunk.end > chunk.start and any(
        start < chunk.end and chunk.start < end for start, end in reference.get(chunk.doc_id, ())
    )


def _smallest_prefix(
    reference: Mapping[DocumentId, list[Interval]], ranking: Sequence[ChunkLike]
) -> tuple[int | None, int]:
    """(the smallest prefix of ``ranking`` holding the most reference characters the whole ranking
    holds, those characters); (None, 0) when it holds none."""
    held: list[ChunkLike] = []  # the chunks so far that hold reference text: only they change the count
    best, at = 0, None
    for position, chunk in enumerate(ranking, start=1):
        if not _holds(reference, chunk):
            continue
        held.append(chunk)
        characters = _held(reference, held)
        if characters > best:
            best, at = characters, position
    return at, best
