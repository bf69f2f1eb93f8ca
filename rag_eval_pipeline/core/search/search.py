"""A search from its inputs to its outcome, without Dagster (the ``search_outcome`` asset and `rag-eval
search` call it; so can a notebook).

A search is named by what its scores depend on (``search_id``): the candidates' settings, the questions
and the corpus blocks of every round, the corpus, the embedder and the objective. The budget is not part
of it: raising the budget of a search that ran out resumes it. The same inputs find the scores stored by
an earlier run (store.py) and pay for nothing twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..progress import Progress, no_progress
from ..questions.datasets import TokenLevelExample
from ..retrieval.rerank import Reranker
from ..retrieval.rewrite import LLMQueryRewriter
from ..settings.configs import RetrievalProfile
from ..store.warehouse import Warehouse
from ..types import QuestionId, sha256_hex
from ..vector_store.base import VectorStore
from .candidates import Candidate, candidates
from .fidelity import Round, rounds
from .outcome import SearchOutcome, grid_cost
from .race import RoundReport, race
from .scoring import PipelineScorer
from .settings import SearchSettings
from .store import WarehouseResultStore


def plan_rounds(
    settings: SearchSettings, corpus: Corpus, examples: Sequence[TokenLevelExample]
) -> list[Round]:
    racing = settings.racing
    return rounds(
        [e.question_id for e in examples],
        {e.question_id: e.relevant_spans for e in examples},
        corpus,
        first_sample=racing.first_sample,
        growth=racing.growth,
        seed=racing.seed,
        corpus_sampling=racing.corpus_sampling,
        block_chars=racing.block_chars,
        distractors=racing.distractors,
        max_sample=racing.max_sample,
    )


def search_id(
    found: Sequence[Candidate],
    planned: Sequence[Round],
    corpus: Corpus,
    embedder_model_id: str,
    objective: str,
) -> str:
    """``search-<12 hex>`` of everything the race's scores depend on."""
    described = {
        "candidates": sorted((c.key, c.chunk_config.config_hash, c.profile.config_hash) for c in found),
        "rounds": [
            [
                list(r.new_questions),
                sorted((b.doc_id, b.start, b.end) for b in r.blocks) if r.blocks is not None else None,
                sorted((b.doc_id, b.start, b.end) for b in r.references),
            ]
            for r in planned
        ],
        "corpus": corpus.sha256,
        "embedder": embedder_model_id,
        "objective": objective,
        "sampling": "references and the middles of blocks",  # how a round keeps a chunk (fidelity.py)
    }
    return "search-" + sha256_hex(json.dumps(described, sort_keys=True))[:12]


def run_search(
    corpus: Corpus,
    examples: Sequence[TokenLevelExample],
    settings: SearchSettings,
    *,
    objective: str,
    tier_alpha: float,
    embedder: Embedder,
    store: VectorStore,
    warehouse: Warehouse,
    reranker_for: Callable[[RetrievalProfile], Reranker | None] = lambda profile: None,
    rewriter: LLMQueryRewriter | None = None,
    root: Path | None = None,
    progress: Progress = no_progress,
    on_start: Callable[[str, Sequence[Candidate], Sequence[Round]], None] = lambda *args: None,
    on_round: Callable[[RoundReport], None] = lambda report: None,
    raced: Sequence[Candidate] | None = None,
) -> SearchOutcome:
    """Race the space of ``settings`` on ``examples`` for ``objective`` (a per-question column of the
    retrieval metrics, ``span_recall_1000t``); the winning tier at ``tier_alpha`` (the leaderboard's).
    ``raced``: these candidates instead of the space's (a benchmark races the same ones with other
    seeds)."""
    found = list(candidates(settings) if raced is None else raced)
    planned = plan_rounds(settings, corpus, examples)
    sid = search_id(found, planned, corpus, embedder.model_id, objective)
    results = WarehouseResultStore(warehouse, sid)
    resumed = results.units()
    by_id: Mapping[QuestionId, TokenLevelExample] = {e.question_id: e for e in examples}
    scorer = PipelineScorer(
        corpus,
        by_id,
        embedder,
        store,
        objective,
        reranker_for=reranker_for,
        rewriter=rewriter,
        root=root,
        progress=progress,
    )
    on_start(sid, found, planned)
    outcome = race(
        found,
        planned,
        scorer,
        results,
        alpha=settings.racing.alpha,
        confirm=settings.racing.confirm,
        questions=[e.question_id for e in examples],
        tier_alpha=tier_alpha,
        budget=settings.budget,
        on_round=on_round,
    )
    dense_configs = {c.chunk_config.name: c.chunk_config for c in found if "knn" in c.profile.retrievers}
    texts = [{sha256_hex(chunk.text) for chunk in scorer.chunks(c)} for c in dense_configs.values()]
    grid = grid_cost(texts, len(found), len(examples))
    return SearchOutcome(sid, objective, len(examples), tuple(found), outcome, grid, resumed)
