"""What each stage of a retrieval profile returned for one question, before the cut to top_k.

``RetrievedChunk`` keeps the ranks and scores of the final top_k only; explaining why a chunk is NOT
in it needs the lists each stage produced. ``ProfileRetriever`` hands them to an optional observer
(``StageObserver``) after each question's search, outside its timing, so a normal run pays nothing and
a replay (core/diagnostics) sees exactly what the run did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..types import QuestionId, RetrievedChunk
from ..vector_store.base import ScoredChunk
from .fusion import FusedHit


@dataclass(frozen=True)
class StageLists:
    """One question's lists, each best first.

    ``dense`` holds the dense candidates the similarity threshold kept (None: no dense side), and
    ``dense_below_threshold`` those it removed from the search's ``candidate_depth`` hits. ``fused`` is
    every candidate in fused order (a single-retriever profile's own list). ``reranked`` is the rerank
    pool (the first ``rerank_depth`` of ``fused``) in the reranker's order, with ``rerank_scores``
    aligned to it (None: no reranker). ``final`` is what the run returned: the first ``top_k``."""

    question_id: QuestionId
    query: str  # what the retrievers searched (after any rewrite)
    dense: tuple[ScoredChunk, ...] | None
    dense_below_threshold: tuple[ScoredChunk, ...]
    keyword: tuple[ScoredChunk, ...] | None
    fused: tuple[FusedHit, ...]
    reranked: tuple[FusedHit, ...] | None
    rerank_scores: tuple[float, ...]
    final: tuple[RetrievedChunk, ...]

    @property
    def ranking(self) -> tuple[FusedHit, ...]:
        """Every candidate in the order the profile ranks it: the reranked pool, then the rest of the
        fused list (which the reranker never saw), so ``ranking[:top_k]`` is ``final``."""
        if self.reranked is None:
            return self.fused
        pooled = {h.chunk.chunk_id for h in self.reranked}
        return self.reranked + tuple(h for h in self.fused if h.chunk.chunk_id not in pooled)


StageObserver = Callable[[StageLists], None]
