"""Oracle chunking: the question's reference spans as chunks, retrieved by the same profile.

A chunker that cut exactly at the reference would leave one chunk per merged reference interval, no
reference split, nothing diluted. The replay builds that chunk set for each question without indexing
anything anew: the chunks holding reference text are taken out of the candidate lists and the reference
chunks put in, each scored as its retriever scores: cosine similarity with the query's vector (dense),
BM25 under the index's own statistics (``KeywordIndex.score_texts``). Then the same profile fuses,
reranks and keeps top_k (``ProfileRetriever``), and the span recall of that top k is
``reference_chunks_recall``.

It can be lower than the actual recall: the reference alone may rank lower than the chunk that holds it
with more context (then the context helped). An oracle chooses the better chunking per question, so
``oracle_chunking_recall = max(span_recall, reference_chunks_recall)`` bounds what this chunking reached.

Embeddings: the reference texts (one per merged interval, each distinct text once per embedder) go
through the embedding cache: the first replay embeds them, every later partition and run finds them
there. Query vectors come from the cache (the evaluation embedded them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..corpus.corpus import Corpus
from ..embedding.base import Embedder, Vectors
from ..embedding.cache import EmbeddingCounts
from ..embedding.prefetch import PrefetchEmbedder
from ..metrics.span_metrics import span_metrics
from ..progress import Progress, no_progress
from ..questions.datasets import TokenLevelExample
from ..retrieval.base import Query
from ..retrieval.hit_order import SCORE_DECIMALS, best_first
from ..retrieval.indexes import ChunkIndexes, DenseIndex
from ..retrieval.keyword import KeywordIndex
from ..retrieval.profile_retriever import ProfileRetriever
from ..retrieval.rerank import Reranker
from ..retrieval.rewrite import QueryRewriter
from ..settings.configs import RetrievalProfile
from ..spans import ChunkSpanIndex, merge_intervals
from ..types import ChunkId, PositionAwareChunk, QuestionId, sha256_hex
from ..vector_store.base import ScoredChunk, VectorStore
from .replay import KnownRewrites
from .store_view import StoreView

REFERENCE_CHUNK_PREFIX = "reference_"


def reference_chunk_id(doc_id: str, start: int, end: int) -> ChunkId:
    return ChunkId(REFERENCE_CHUNK_PREFIX + sha256_hex(f"{doc_id}\0{start}\0{end}")[:12])


@dataclass(frozen=True)
class ReferenceChunks:
    """Each question's merged reference intervals as chunks, and their vectors (dense profiles)."""

    by_question: Mapping[QuestionId, tuple[PositionAwareChunk, ...]]
    vectors: Mapping[ChunkId, np.ndarray]
    embedding: EmbeddingCounts  # what embedding them cost: texts sent to the model, cache hits

    @property
    def n_texts(self) -> int:
        return len({c.text for chunks in self.by_question.values() for c in chunks})


def reference_chunks(
    examples: Sequence[TokenLevelExample], corpus: Corpus, embedder: Embedder | None
) -> ReferenceChunks:
    """The reference chunks of every question, embedded in one call (each distinct text once)."""
    by_question: dict[QuestionId, tuple[PositionAwareChunk, ...]] = {}
    for e in examples:
        merged = merge_intervals(e.relevant_spans)
        by_question[e.question_id] = tuple(
            PositionAwareChunk(reference_chunk_id(doc, s, t), doc, s, t, corpus[doc].text[s:t])
            for doc, intervals in merged.items()
            for s, t in intervals
        )
    vectors: dict[ChunkId, np.ndarray] = {}
    before = EmbeddingCounts.of(embedder) if embedder is not None else EmbeddingCounts()
    if embedder is not None:
        chunks = list({c.chunk_id: c for cs in by_question.values() for c in cs}.values())
        if chunks:
            embedded = embedder.embed([c.text for c in chunks])
            vectors = {
                c.chunk_id: np.asarray(v, dtype=np.float64) for c, v in zip(chunks, embedded, strict=True)
            }
    counts = EmbeddingCounts.of(embedder).since(before) if embedder is not None else EmbeddingCounts()
    return ReferenceChunks(by_question, vectors, counts)


def _ranked(hits: list[ScoredChunk], k: int) -> list[ScoredChunk]:
    return best_first(hits, lambda h: h.score, lambda h: h)[:k]  # as the engines order them


def _scored(chunk: PositionAwareChunk, score: float) -> ScoredChunk:
    return ScoredChunk(chunk.chunk_id, chunk.doc_id, chunk.start, chunk.end, float(score), chunk.text)


class _DenseView(StoreView):
    """A collection as if the chunks ``without`` were replaced by ``extra``: searched through the real
    store (deeper by the number left out), the extra chunks scored by cosine similarity."""

    def __init__(
        self,
        store: VectorStore,
        without: frozenset[ChunkId],
        extra: Sequence[PositionAwareChunk],
        vectors: Mapping[ChunkId, np.ndarray],
    ) -> None:
        super().__init__(store)
        self.without = without
        self.extra = list(extra)
        self.matrix = np.stack([vectors[c.chunk_id] for c in extra]) if extra else np.zeros((0, 1))
        norms = np.linalg.norm(self.matrix, axis=1, keepdims=True) if extra else None
        if norms is not None:
            self.matrix = self.matrix / np.where(norms > 0, norms, 1.0)

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        found = self.store.search(name, queries, k + len(self.without))
        results = []
        for query, hits in zip(queries, found, strict=True):
            kept = [h for h in hits if h.chunk_id not in self.without]
            if self.extra:
                q = np.asarray(query, dtype=np.float64)
                norm = np.linalg.norm(q)
                similarities = self.matrix @ (q / norm if norm > 0 else q)
                kept += [_scored(c, s) for c, s in zip(self.extra, similarities, strict=True)]
            results.append(_ranked(kept, k))
        return results

    def count(self, name: str) -> int:
        return self.store.count(name) - len(self.without) + len(self.extra)


class _KeywordView:
    """A BM25 index as if the chunks ``without`` were replaced by ``extra`` (scored under the index's
    statistics); only chunks sharing a query term are hits, as in the index."""

    def __init__(self, index: KeywordIndex, without: frozenset[ChunkId], extra: Sequence[PositionAwareChunk]):
        self.index = index
        self.without = without
        self.extra = list(extra)

    def search(self, queries: Sequence[str], k: int) -> list[list[ScoredChunk]]:
        found = self.index.search(queries, k + len(self.without))
        results = []
        for query, hits in zip(queries, found, strict=True):
            kept = [h for h in hits if h.chunk_id not in self.without]
            scores = self.index.score_texts(query, [c.text for c in self.extra])
            kept += [
                _scored(c, s) for c, s in zip(self.extra, scores, strict=True) if round(s, SCORE_DECIMALS) > 0
            ]
            results.append(_ranked(kept, k))
        return results


def reference_chunks_recall(
    examples: Sequence[TokenLevelExample],
    chunk_index: ChunkSpanIndex[PositionAwareChunk],
    references: ReferenceChunks,
    profile: RetrievalProfile,
    indexes: ChunkIndexes,
    *,
    reranker: Reranker | None = None,
    rewriter: QueryRewriter | None = None,
    progress: Progress = no_progress,
) -> dict[QuestionId, float]:
    """Each question's span recall with its reference spans as chunks (the module docstring), one
    profile run per question (each has its own chunk set). ``rewriter``: one that calls no LLM
    (``replay.KnownRewrites``), since every question runs alone."""
    recalls: dict[QuestionId, float] = {}
    stage = f"oracle chunking ({profile.name})"
    progress(stage, 0, len(examples))
    embedder = None
    if indexes.dense is not None and "knn" in profile.retrievers:
        # the questions' searched texts from the embedding cache in one call, not in one lookup each (a
        # rewriter other than a replay's known rewrites is not asked ahead: it might call an LLM)
        searched = [e.query for e in examples]
        if isinstance(rewriter, KnownRewrites):
            searched = [rewriter.searched.get(text, text) for text in searched]
        elif rewriter is not None:
            searched = []
        embedder = PrefetchEmbedder(indexes.dense.embedder, searched)
    with indexes.held_open():  # each question's run would open the collection again
        for done, e in enumerate(examples, start=1):
            extra = references.by_question[e.question_id]
            without = frozenset(c.chunk_id for c in chunk_index.overlapping(e.relevant_spans))
            dense = None
            if indexes.dense is not None and embedder is not None:
                view = _DenseView(indexes.dense.store, without, extra, references.vectors)
                dense = DenseIndex(embedder, view, indexes.dense.collection)
            keyword = None
            if indexes.keyword is not None and "bm25" in profile.retrievers:
                keyword = _KeywordView(indexes.keyword, without, extra)
            retriever = ProfileRetriever(
                profile, dense=dense, keyword=keyword, reranker=reranker, rewriter=rewriter
            )
            hits = retriever.run([Query(e.question_id, e.query)]).hits[e.question_id]
            recalls[e.question_id] = span_metrics(e.relevant_spans, hits).span_recall
            progress(stage, done, len(examples))
    return recalls
