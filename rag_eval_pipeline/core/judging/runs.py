"""The runs a pool is made of, made with the pipeline's own steps (``cut_corpus``, ``build_indexes``,
``retrieve``): every configured setup (chunk config x retrieval profile), and two runs independent of
the configs.

The two independent runs search the documents cut into fixed windows of ``WINDOW_SIZE`` (500)
characters overlapping by ``WINDOW_OVERLAP`` (100), once by BM25 alone and once by the workspace's
embedder alone (``bm25@windows-500``, ``dense@windows-500``). They pool text that every configured
setup misses (a TREC pool is only as good as its most different run), and they stay the same when the
configs change, so a new config is measured against judgements it did not shape. 500 characters is a
paragraph a person reads in a few seconds; the overlap keeps a sentence at a window's edge whole in the
next one.

A setup's ranked list is its evaluated top_k exactly as ``retrieve`` returns it (so judged@k measures
what the evaluation scores), continued to ``depth`` by the same profile asked for ``depth`` hits when
``depth`` is deeper. A chunk config limited to some documents cuts only those, as its evaluation does.
A profile that needs a reranker or a query rewriter (an LLM) that is not available is skipped, and said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..chunking import FixedSizeChunker, build_chunker, cut_corpus
from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..evaluation.document_scope import DocumentScope
from ..progress import Progress, no_progress
from ..retrieval.base import Query
from ..retrieval.indexes import build_indexes
from ..retrieval.profile_retriever import retrieve
from ..retrieval.rerank import Reranker
from ..retrieval.rewrite import QueryRewriter
from ..settings.configs import PipelineConfigs, RetrievalProfile, Retriever
from ..types import ProfileName, QuestionId, RetrievedChunk
from ..vector_store.base import VectorStore
from .pool import PoolRun, RankedSpan
from .types import ImportedQuery, QueryId

WINDOW_SIZE = 500
WINDOW_OVERLAP = 100
WINDOWS = f"windows-{WINDOW_SIZE}"
BM25_RUN = f"bm25@{WINDOWS}"
DENSE_RUN = f"dense@{WINDOWS}"


def setup_name(chunk_config: str, profile: str) -> str:
    return f"{chunk_config} x {profile}"


@dataclass(frozen=True)
class SetupRuns:
    """The runs (setups in the configs' order, then the two window runs), the k each setup is evaluated
    at (its profile's top_k; the window runs have none), and the setups skipped with why."""

    runs: tuple[PoolRun, ...]
    evaluated_k: dict[str, int]
    skipped: tuple[str, ...] = ()


def retrieval_runs(
    queries: Sequence[ImportedQuery],
    corpus: Corpus,
    configs: PipelineConfigs,
    embedder: Embedder,
    store: VectorStore,
    depth: int,
    *,
    root: Path | None = None,
    reranker_for: Callable[[RetrievalProfile], Reranker | None] = lambda profile: None,
    rewriter_for: Callable[[RetrievalProfile], QueryRewriter | None] = lambda profile: None,
    progress: Progress = no_progress,
) -> SetupRuns:
    """Every setup's ranked list to ``depth`` (at least its top_k) and the two window runs, for
    ``queries``. ``store`` is a scratch vector store (the embeddings come from the embedder's cache)."""
    asked = [Query(QuestionId(q.query_id), q.text) for q in queries]
    runs: list[PoolRun] = []
    evaluated_k: dict[str, int] = {}
    skipped: list[str] = []
    usable: list[tuple[RetrievalProfile, Reranker | None, QueryRewriter | None]] = []
    for profile in configs.profiles:
        reranker = reranker_for(profile) if profile.reranker is not None else None
        rewriter = rewriter_for(profile) if profile.query_rewrite_enabled else None
        if profile.reranker is not None and reranker is None:
            skipped.append(f"{profile.name}: reranks with {profile.reranker}, which is not available here")
        elif profile.query_rewrite_enabled and rewriter is None:
            skipped.append(f"{profile.name}: rewrites queries, and no LLM is configured")
        else:
            usable.append((profile, reranker, rewriter))
    retrievers: set[Retriever] = {r for profile, _, _ in usable for r in profile.retrievers}
    for config in configs.chunk_configs:
        if not usable:
            break
        documents = DocumentScope.of(config).corpus(corpus)
        chunk_set = cut_corpus(build_chunker(config, embedder=embedder, root=root), documents, config.name)
        indexes = build_indexes(chunk_set, embedder, store, retrievers=retrievers, progress=progress)
        with indexes.held_open():  # every profile searches this collection: opened once
            for profile, reranker, rewriter in usable:
                name = setup_name(config.name, profile.name)
                found = retrieve(
                    profile, indexes, asked, reranker=reranker, rewriter=rewriter, progress=progress
                )
                hits = found.hits
                if depth > profile.top_k:
                    deeper = replace(profile, top_k=depth, rerank_depth=max(profile.rerank_depth, depth))
                    more = retrieve(
                        deeper, indexes, asked, reranker=reranker, rewriter=rewriter, progress=progress
                    )
                    hits = {q: _continued(hits.get(q, []), more.hits.get(q, [])) for q in more.hits}
                runs.append(PoolRun(name, _by_query(hits)))
                evaluated_k[name] = profile.top_k
    windows = cut_corpus(FixedSizeChunker(WINDOW_SIZE, WINDOW_OVERLAP), corpus, WINDOWS)
    indexes = build_indexes(windows, embedder, store, progress=progress)
    for name, profile in (
        (BM25_RUN, RetrievalProfile(ProfileName("bm25"), top_k=depth, vector_weight=0.0, keyword_weight=1.0)),
        (DENSE_RUN, RetrievalProfile(ProfileName("dense"), top_k=depth)),
    ):
        runs.append(PoolRun(name, _by_query(retrieve(profile, indexes, asked, progress=progress).hits)))
    return SetupRuns(tuple(runs), evaluated_k, tuple(skipped))


def _continued(evaluated: list[RetrievedChunk], deeper: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """The evaluated list, then the deeper list's other chunks, ranked on from there."""
    seen = {c.chunk_id for c in evaluated}
    tail = [c for c in deeper if c.chunk_id not in seen]
    return [*evaluated, *(replace(c, rank=len(evaluated) + i) for i, c in enumerate(tail, start=1))]


def _by_query(hits: dict[QuestionId, list[RetrievedChunk]]) -> dict[QueryId, Sequence[RankedSpan]]:
    return {QueryId(q): list(found) for q, found in hits.items()}
