"""Replaying a profile to see what each stage returned: the same ``ProfileRetriever``, the same indexes,
the queries' vectors from the embedding cache, with an observer that keeps every question's lists.

A replay must return what the evaluation recorded (``retrieval_results``): the search is exact and
ties go in document order, so a difference means the indexes or the profile changed since, and the
diagnostics would explain another result. ``check_replay`` refuses that, naming the question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..progress import Progress, no_progress
from ..retrieval.base import Query
from ..retrieval.indexes import ChunkIndexes
from ..retrieval.profile_retriever import retrieve
from ..retrieval.rerank import Reranker
from ..retrieval.rewrite import QueryRewriter, RewrittenQuery
from ..retrieval.stages import StageLists
from ..settings.configs import RetrievalProfile
from ..types import QuestionId, RetrievedChunk


class ReplayMismatch(RuntimeError):
    """A replay returned other chunks than the evaluation recorded."""


class StageRecorder:
    """The observer of a replay: each question's ``StageLists``, by question id."""

    def __init__(self) -> None:
        self.lists: dict[QuestionId, StageLists] = {}

    def __call__(self, stages: StageLists) -> None:
        self.lists[stages.question_id] = stages


class KnownRewrites:
    """A query rewriter that returns rewrites a replay already made (question -> searched text), so a
    further replay of the same questions calls no LLM."""

    model_id = "known-rewrites"

    def __init__(self, searched: Mapping[str, str]) -> None:
        self.searched = dict(searched)

    def rewrite(self, queries: Sequence[str], progress: Progress = no_progress) -> list[RewrittenQuery]:
        return [
            RewrittenQuery(q, self.searched[q], "unchanged" if self.searched[q] == q else "rewritten")
            for q in queries
        ]


def replay(
    profile: RetrievalProfile,
    indexes: ChunkIndexes,
    queries: Sequence[Query],
    *,
    reranker: Reranker | None = None,
    rewriter: QueryRewriter | None = None,
    progress: Progress = no_progress,
    candidates_only: bool = False,
) -> dict[QuestionId, StageLists]:
    """Every question's stage lists, from one run of the profile; with ``candidates_only``, the lists
    up to the fused (or reranked) one, without the top_k (``final`` empty)."""
    recorder = StageRecorder()
    retrieve(
        profile,
        indexes,
        queries,
        reranker=reranker,
        rewriter=rewriter,
        progress=progress,
        observer=recorder,
        candidates_only=candidates_only,
    )
    return recorder.lists


def check_replay(
    replayed: Mapping[QuestionId, StageLists], recorded: Mapping[QuestionId, Sequence[RetrievedChunk]]
) -> None:
    """Raises ``ReplayMismatch`` naming the first question whose replayed top-k (chunk ids in order)
    is not the recorded one."""
    for qid in sorted(replayed):
        got = [h.chunk_id for h in replayed[qid].final]
        wanted = [h.chunk_id for h in recorded.get(qid, ())]
        if got != wanted:
            raise ReplayMismatch(
                f"question {qid}: retrieval_results holds {wanted or 'no chunk'}, but the profile returns "
                f"{got or 'no chunk'} now: the chunk index or the profile changed since retrieval_results "
                f"was made; materialize retrieval_results again"
            )
