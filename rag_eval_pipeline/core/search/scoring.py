"""Scoring candidates with the pipeline's own steps (``cut_corpus``, ``build_indexes``, ``retrieve``,
``token_level_result``), on a round's corpus: the numbers a search races on are the leaderboard's.

A chunk config is cut once per search; each round updates its collection in place with the chunks of the
round's blocks (fidelity.py), embedding only what the embedding cache does not hold, so candidates that
share a chunk config share its embeddings and a resumed search embeds nothing it embedded before. Keyword
indexes are built in memory per round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..chunking import ChunkSet, build_chunker, cut_corpus
from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..evaluation.costs import LATENCY_MS
from ..evaluation.evaluation import token_level_result
from ..metrics.names import CONTEXT_TOKENS
from ..progress import Progress, no_progress
from ..questions.datasets import TokenLevelExample
from ..retrieval.base import Query
from ..retrieval.indexes import build_indexes
from ..retrieval.profile_retriever import retrieve
from ..retrieval.rerank import Reranker
from ..retrieval.rewrite import LLMQueryRewriter
from ..settings.configs import ChunkConfig, RetrievalProfile, Retriever
from ..types import PositionAwareChunk, ProfileName, QuestionId, sha256_hex
from ..vector_store.base import VectorStore, collection_name
from .candidates import Candidate
from .fidelity import Round
from .race import FULL_CORPUS, VALUE, Spend


class PipelineScorer:
    """A ``race.Scorer`` over the pipeline's steps. ``objective`` is the per-question column ranked by
    (``span_recall_1000t``); ``reranker_for`` loads a profile's cross-encoder; ``rewriter`` rewrites the
    questions of profiles that ask for it (its client's spend counts as the search's LLM dollars)."""

    def __init__(
        self,
        corpus: Corpus,
        examples: Mapping[QuestionId, TokenLevelExample],
        embedder: Embedder,
        store: VectorStore,
        objective: str,
        *,
        reranker_for: Callable[[RetrievalProfile], Reranker | None] = lambda profile: None,
        rewriter: LLMQueryRewriter | None = None,
        root: Path | None = None,
        progress: Progress = no_progress,
    ) -> None:
        self.corpus = corpus
        self.examples = examples
        self.embedder = embedder
        self.store = store
        self.objective = objective
        self.reranker_for = reranker_for
        self.rewriter = rewriter
        self.root = root
        self.progress = progress
        self.spend = Spend()
        self._chunks: dict[str, tuple[PositionAwareChunk, ...]] = {}
        self._kept: dict[tuple[str, Round], tuple[PositionAwareChunk, ...]] = {}
        self._indexed: set[str] = set()

    def chunks(self, config: ChunkConfig) -> tuple[PositionAwareChunk, ...]:
        """The whole corpus cut by ``config`` (once per search)."""
        if config.name not in self._chunks:
            chunker = build_chunker(config, root=self.root)
            self._chunks[config.name] = cut_corpus(chunker, self.corpus, config.name).chunks
        return self._chunks[config.name]

    def kept(self, config: ChunkConfig, round: Round) -> tuple[PositionAwareChunk, ...]:
        """The chunks of ``config`` the round indexes (once per chunk config and round)."""
        if (config.name, round) not in self._kept:
            self._kept[(config.name, round)] = tuple(c for c in self.chunks(config) if round.keeps(c))
        return self._kept[(config.name, round)]

    def note_indexed(self, candidates: Sequence[Candidate], round: Round) -> None:
        """The chunk texts the round puts into the dense index of these candidates' chunk config."""
        if any("knn" in c.profile.retrievers for c in candidates):
            self._indexed |= {sha256_hex(c.text) for c in self.kept(candidates[0].chunk_config, round)}

    def texts_indexed(self) -> int:
        return len(self._indexed)

    def score(
        self, candidates: Sequence[Candidate], round: Round, questions: Sequence[QuestionId]
    ) -> Mapping[ProfileName, pd.DataFrame]:
        config = candidates[0].chunk_config
        kept = self.kept(config, round)
        sides = {side for c in candidates for side in c.profile.retrievers}
        retrievers: tuple[Retriever, ...] = tuple(s for s in ("knn", "bm25") if s in sides)
        indexes = build_indexes(
            ChunkSet(config.name, kept),
            self.embedder,
            self.store,
            collection=collection_name(f"search-{config.name}", self.embedder.model_id),
            retrievers=retrievers,
            progress=self.progress,
        )
        self.spend.texts_embedded += indexes.embedding.texts_embedded
        examples = [self.examples[q] for q in questions]
        queries = [Query(e.question_id, e.query) for e in examples]
        scores: dict[ProfileName, pd.DataFrame] = {}
        with indexes.held_open():  # every candidate searches this collection: opened once
            for candidate in candidates:
                profile = candidate.profile
                run = retrieve(
                    profile,
                    indexes,
                    queries,
                    reranker=self.reranker_for(profile) if profile.reranker is not None else None,
                    rewriter=self.rewriter if profile.query_rewrite_enabled else None,
                    progress=self.progress,
                )
                self.spend.texts_embedded += run.query_embedding.texts_embedded
                result = token_level_result(
                    examples, run.hits, kept, profile.top_k, self.corpus, [self.objective, CONTEXT_TOKENS]
                )
                scores[profile.name] = pd.DataFrame(
                    {
                        "question_id": [r.question_id for r in result.raw_results],
                        VALUE: [float(r.metrics[self.objective]) for r in result.raw_results],
                        CONTEXT_TOKENS: [float(r.metrics[CONTEXT_TOKENS]) for r in result.raw_results],
                        LATENCY_MS: [float(run.traces[r.question_id].search_ms) for r in result.raw_results],
                        FULL_CORPUS: round.full_corpus,
                    }
                )
        if self.rewriter is not None:
            self.spend.llm_usd = float(self.rewriter.client.usage_snapshot().cost_usd or 0.0)
        return scores
