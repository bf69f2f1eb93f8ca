"""Benchmark: raced search against the full grid on chroma_general (Chroma's chunking-evaluation data).

The full grid scores every candidate of the space on every question over the whole corpus and ranks them
into the leaderboard's tiers; the search (core/search/) races the same candidates. Both run the same
scoring code (``PipelineScorer``: ``cut_corpus``, ``build_indexes``, ``retrieve``, ``token_level_result``),
each with an embedding cache of its own, empty at the start, so "texts embedded" counts what each paid.
Printed: the full grid's best and tier 1; the search's winning tier; whether the search's best is in the
full grid's tier 1 (the goal) and its score against the full grid's best; chunk texts indexed, texts
embedded and queries run by each, and their ratios (goal: <= 40 % of the full grid's texts and queries).

    python benchmarks/search.py [--space broad|narrow|FILE] [--data DIR] [--block-chars N]
        [--first-sample N] [--work DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chroma_general import DEFAULT_DATA, default_embedder, load_benchmark

from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.leaderboard.tiers import statistical_tiers
from rag_eval_pipeline.core.search.candidates import Candidate, candidates
from rag_eval_pipeline.core.search.fidelity import Round
from rag_eval_pipeline.core.search.race import VALUE
from rag_eval_pipeline.core.search.scoring import PipelineScorer
from rag_eval_pipeline.core.search.search import run_search
from rag_eval_pipeline.core.search.settings import (
    ChunkingChoices,
    RetrievalChoices,
    SearchSettings,
    load_search_settings,
)
from rag_eval_pipeline.core.types import sha256_hex
from rag_eval_pipeline.core.vector_store.engines import open_vector_store
from rag_eval_pipeline.core.warehouse import Warehouse

OBJECTIVE = "span_recall_1000t"  # the leaderboard's default objective
ALPHA = 0.05
SPACES = {
    # what a team that does not know which grid to write searches: 24 chunk configs (two chunkers, sizes
    # from 50 to 1,600 cl100k tokens, two overlaps) x 12 profiles (k 1 to 10; dense, hybrid, keyword) =
    # 288 candidates, of which racing.max_candidates (64) are sampled with the seed
    "broad": SearchSettings(
        chunking=ChunkingChoices(
            chunker=("recursive", "token"), chunk_size=(50, 100, 200, 400, 800, 1600), overlap=(0.0, 0.25)
        ),
        retrieval=RetrievalChoices(top_k=(1, 3, 5, 10), keyword_weight=(0.0, 0.5, 1.0)),
    ),
    # a grid of reasonable variants only: 16 chunk configs (100 to 800 tokens) x dense and hybrid at k 5
    "narrow": SearchSettings(
        chunking=ChunkingChoices(
            chunker=("recursive", "token"), chunk_size=(100, 200, 400, 800), overlap=(0.0, 0.25)
        ),
        retrieval=RetrievalChoices(top_k=(5,), keyword_weight=(0.0, 0.5)),
    ),
}


def full_grid(
    found: Sequence[Candidate], scorer: PipelineScorer, question_ids: Sequence[str]
) -> dict[str, pd.Series]:
    """Every candidate on every question over the whole corpus (a chunk config at a time)."""
    everything = Round(0, tuple(question_ids), tuple(question_ids), None)  # type: ignore[arg-type]
    groups: dict[str, list[Candidate]] = {}
    for c in found:
        groups.setdefault(c.chunk_config.name, []).append(c)
    values: dict[str, pd.Series] = {}
    for group in groups.values():
        scorer.note_indexed(group, everything)
        scores = scorer.score(group, everything, everything.questions)
        for c in group:
            values[c.key] = scores[c.profile.name].set_index("question_id")[VALUE]
    return values


def main(argv: Sequence[str] | None = None, embedder: Embedder | None = None) -> int:
    """``embedder``: another model than MiniLM (the tests pass a cheap one)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--space", default="broad", help="broad (64 of 288 candidates), narrow (32), or a search.yaml file"
    )
    parser.add_argument("--block-chars", type=int, help="racing.block_chars (default: the space's)")
    parser.add_argument("--first-sample", type=int, help="racing.first_sample (default: the space's)")
    parser.add_argument("--work", type=Path, help="folder for the caches, indexes and warehouses (kept)")
    parser.add_argument("--limit-questions", type=int, help="only the first N questions (by id)")
    args = parser.parse_args(argv)
    settings = SPACES[args.space] if args.space in SPACES else load_search_settings(Path(args.space))
    racing = settings.racing
    if args.block_chars:
        racing = replace(racing, block_chars=args.block_chars)
    if args.first_sample:
        racing = replace(racing, first_sample=args.first_sample)
    settings = replace(settings, racing=racing)
    data = load_benchmark(args.data)
    examples = sorted(data.dataset.examples, key=lambda e: e.question_id)[: args.limit_questions]
    found = candidates(settings)
    work = args.work or Path(tempfile.mkdtemp(prefix="rag-eval-search-bench-"))
    print(
        f"chroma_general: {len(data.corpus.documents)} corpora, {sum(len(d.text) for d in data.corpus):,} "
        f"characters, {len(examples)} questions; {len(found)} candidates; objective {OBJECTIVE}; work {work}"
    )
    model = embedder or default_embedder()

    # the full grid, with an embedding cache of its own
    grid_embedder = CachedEmbedder(model, EmbeddingCache(work / "grid/embeddings.sqlite"))
    grid_scorer = PipelineScorer(
        data.corpus,
        {e.question_id: e for e in examples},
        grid_embedder,
        open_vector_store(path=work / "grid/qdrant"),
        OBJECTIVE,
    )
    started = time.perf_counter()
    values = full_grid(found, grid_scorer, [e.question_id for e in examples])
    grid_seconds = time.perf_counter() - started
    ranked = sorted(values, key=lambda k: (-float(values[k].mean()), k))
    tiers = statistical_tiers([values[k] for k in ranked], ALPHA)
    tier_1 = [k for k, t in zip(ranked, tiers, strict=True) if t.tier == 1]
    grid_queries = len(found) * len(examples)
    grid_texts = grid_scorer.texts_indexed()

    # the search, with an empty embedding cache of its own
    search_embedder = CachedEmbedder(model, EmbeddingCache(work / "search/embeddings.sqlite"))
    started = time.perf_counter()
    outcome = run_search(
        data.corpus,
        examples,
        settings,
        objective=OBJECTIVE,
        tier_alpha=ALPHA,
        embedder=search_embedder,
        store=open_vector_store(path=work / "search/qdrant"),
        warehouse=Warehouse(work / "search/warehouse"),
    )
    search_seconds = time.perf_counter() - started
    spend = outcome.race.spend
    best = outcome.winners[0] if outcome.winners else None
    print()
    print(f"full grid: {len(found)} candidates x {len(examples)} questions in {grid_seconds:,.0f} s")
    print(f"  best: {ranked[0]} {values[ranked[0]].mean():.4f}; tier 1 ({len(tier_1)}): {', '.join(tier_1)}")
    print(
        f"  chunk texts indexed {grid_texts:,}, texts embedded {grid_scorer.spend.texts_embedded:,} "
        f"(chunks and questions), queries {grid_queries:,}"
    )
    print(f"search ({outcome.search_id}): {len(outcome.race.rounds)} rounds in {search_seconds:,.0f} s")
    print(f"  winning tier ({len(outcome.winners)}): {', '.join(outcome.winners)}")
    if best is not None:
        in_tier = "yes" if best in tier_1 else "NO"
        same = "the same setup" if best == ranked[0] else f"full grid's best is {ranked[0]}"
        print(
            f"  best: {best} {outcome.race.fates[best].mean:.4f} (full grid {values[best].mean():.4f}; "
            f"{same}); in the full grid's tier 1: {in_tier}; winners in the full grid's tier 1: "
            f"{sum(1 for w in outcome.winners if w in tier_1)} of {len(outcome.winners)}"
        )
    print(
        f"  chunk texts indexed {spend.texts_indexed:,} ({spend.texts_indexed / grid_texts:.0%} of the grid's), "
        f"texts embedded {spend.texts_embedded:,} ({spend.texts_embedded / max(1, grid_scorer.spend.texts_embedded):.0%}), "
        f"queries {spend.queries:,} ({spend.queries / grid_queries:.0%})"
    )
    eliminated = [f for f in outcome.race.fates.values() if f.status == "eliminated"]
    by_round: dict[int, int] = {}
    for f in eliminated:
        by_round[f.round or 0] = by_round.get(f.round or 0, 0) + 1
    print(
        "  eliminated per round: "
        + ", ".join(
            f"round {r} ({len(outcome.race.rounds[r].round.questions)} questions): {n}"
            for r, n in sorted(by_round.items())
        )
    )
    # what any search that scores its winners on every question over the whole corpus must pay at least
    by_key = {c.key: c for c in found}
    winner_configs = {by_key[k].chunk_config.name: by_key[k].chunk_config for k in outcome.winners}
    floor_texts = len(
        {
            sha256_hex(chunk.text)
            for config in winner_configs.values()
            if any(
                by_key[k].chunk_config.name == config.name and "knn" in by_key[k].profile.retrievers
                for k in outcome.winners
            )
            for chunk in grid_scorer.chunks(config)
        }
    )
    floor_queries = len(outcome.winners) * len(examples)
    print(
        f"  the least a search confirming its winning tier on the whole corpus pays: the tier's "
        f"{len(winner_configs)} chunk configs hold {floor_texts:,} texts ({floor_texts / grid_texts:.0%} of the "
        f"grid's); its {len(outcome.winners)} setups x {len(examples)} questions = {floor_queries:,} queries "
        f"({floor_queries / grid_queries:.0%})"
    )
    wrongly = [f.key for f in eliminated if f.key in tier_1]
    print(f"  eliminated though in the full grid's tier 1: {', '.join(wrongly) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
