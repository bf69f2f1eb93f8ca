"""Benchmark: raced search against the full grid on chroma_general (Chroma's chunking-evaluation data).

The full grid scores every candidate of the space on every question over the whole corpus and ranks them
into the leaderboard's tiers; the search (core/search/) races the same candidates. Both run the same
scoring code (``PipelineScorer``: ``cut_corpus``, ``build_indexes``, ``retrieve``, ``token_level_result``),
each with an embedding cache of its own, empty at the start, so "texts embedded" counts what each paid.
Printed: the full grid's best and tier 1; per search, its winning tier (the race's survivors) and how
many of them are in the full grid's tier 1, its confirmed winner, whether that is in the full grid's tier 1
(the goal) and its score against the full grid's best; chunk texts indexed, texts embedded and queries
run by each, and their ratios (goal: <= 40 % of the full grid's texts and queries). With several
``--race-seeds``, one search per seed over the same candidates, and a summary.

    python benchmarks/search.py [--space broad|narrow|FILE] [--data DIR] [--questions FILE]
        [--corpora NAME,...] [--limit-questions N] [--racing KEY=VALUE ...] [--race-seeds 7,1,2]
        [--work DIR]

``--data``, ``--questions`` and ``--corpora`` select the data as in benchmarks/chroma_general.py (the same
loader): another benchmark folder, another questions CSV, only some corpora and the questions about them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chroma_general import DEFAULT_DATA, BenchmarkData, default_embedder, describe_data, load_benchmark

from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.leaderboard.tiers import statistical_tiers
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample
from rag_eval_pipeline.core.search.candidates import Candidate, candidates
from rag_eval_pipeline.core.search.fidelity import Round
from rag_eval_pipeline.core.search.race import VALUE
from rag_eval_pipeline.core.search.scoring import PipelineScorer
from rag_eval_pipeline.core.search.search import run_search
from rag_eval_pipeline.core.search.settings import (
    ChunkingChoices,
    RetrievalChoices,
    SearchSettings,
)
from rag_eval_pipeline.core.settings.settings_file import load_settings
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.vector_store.engines import open_vector_store

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
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="folder with corpora/ and questions.csv (or the public benchmark's questions_df.csv)",
    )
    parser.add_argument(
        "--questions",
        type=Path,
        metavar="FILE",
        help="questions CSV (question, references, corpus_id); default: the one in --data",
    )
    parser.add_argument(
        "--corpora",
        metavar="NAME,...",
        help="only these corpora (file stems in --data/corpora) and the questions about them",
    )
    parser.add_argument(
        "--space", default="broad", help="broad (64 of 288 candidates), narrow (32), or a search.yaml file"
    )
    parser.add_argument(
        "--racing",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a racing setting other than the space's (repeatable): --racing distractors=0.5 --racing "
        "max_sample=null",
    )
    parser.add_argument("--work", type=Path, help="folder for the caches, indexes and warehouses (kept)")
    parser.add_argument("--limit-questions", type=int, help="only the first N questions (by id)")
    parser.add_argument(
        "--race-seeds",
        default="7",
        help="racing.seed of each search, comma-separated (the questions' and blocks' orders; the "
        "candidates stay those of the space's seed): one search per seed, each from an empty cache",
    )
    args = parser.parse_args(argv)
    settings = SPACES[args.space] if args.space in SPACES else load_settings(Path(args.space), SearchSettings)
    changed = dict(item.split("=", 1) for item in args.racing)
    settings = replace(
        settings, racing=replace(settings.racing, **{k: yaml.safe_load(v) for k, v in changed.items()})
    )
    seeds = [int(seed) for seed in args.race_seeds.split(",")]
    try:
        data = load_benchmark(args.data, args.questions, args.corpora)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    examples = sorted(data.dataset.examples, key=lambda e: e.question_id)[: args.limit_questions]
    found = candidates(settings)
    work = args.work or Path(tempfile.mkdtemp(prefix="rag-eval-search-bench-"))
    print(describe_data(data))
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
    grid_embedded = grid_scorer.spend.texts_embedded

    print()
    print(f"full grid: {len(found)} candidates x {len(examples)} questions in {grid_seconds:,.0f} s")
    print(f"  best: {ranked[0]} {values[ranked[0]].mean():.4f}; tier 1 ({len(tier_1)}): {', '.join(tier_1)}")
    print(
        f"  chunk texts indexed {grid_texts:,}, texts embedded {grid_embedded:,} (chunks and questions), "
        f"queries {grid_queries:,}"
    )
    results = []
    for seed in seeds:
        seeded = replace(settings, racing=replace(settings.racing, seed=seed))
        results.append(
            search_once(seeded, found, data, examples, model, work / f"search-{seed}", values, ranked, tier_1)
        )
        results[-1].describe(grid_texts, grid_embedded, grid_queries)
    if len(results) > 1:
        texts = [r.texts_embedded / grid_embedded for r in results]
        queries = [r.queries / grid_queries for r in results]
        print(
            f"over {len(results)} race seeds ({', '.join(map(str, seeds))}): the confirmed winner in the full "
            f"grid's tier 1 {sum(r.in_tier for r in results)} of {len(results)} times; texts embedded median "
            f"{statistics.median(texts):.0%} (max {max(texts):.0%}), queries median "
            f"{statistics.median(queries):.0%} (max {max(queries):.0%}) of the full grid's"
        )
    return 0


@dataclass
class SearchResult:
    seed: int
    lines: list[str]
    texts_indexed: int
    texts_embedded: int
    queries: int
    in_tier: bool

    def describe(self, grid_texts: int, grid_embedded: int, grid_queries: int) -> None:
        print("\n".join(self.lines))
        print(
            f"  chunk texts indexed {self.texts_indexed:,} ({self.texts_indexed / grid_texts:.0%} of the grid's), "
            f"texts embedded {self.texts_embedded:,} ({self.texts_embedded / grid_embedded:.0%}), "
            f"queries {self.queries:,} ({self.queries / grid_queries:.0%})"
        )


def search_once(
    settings: SearchSettings,
    found: Sequence[Candidate],
    data: BenchmarkData,
    examples: Sequence[TokenLevelExample],
    model: Embedder,
    work: Path,
    values: dict[str, pd.Series],
    ranked: Sequence[str],
    tier_1: Sequence[str],
) -> SearchResult:
    """The search over ``found`` with ``settings``' racing, from an empty embedding cache of its own."""
    search_embedder = CachedEmbedder(model, EmbeddingCache(work / "embeddings.sqlite"))
    started = time.perf_counter()
    outcome = run_search(
        data.corpus,
        examples,
        settings,
        objective=OBJECTIVE,
        tier_alpha=ALPHA,
        embedder=search_embedder,
        store=open_vector_store(path=work / "qdrant"),
        warehouse=Warehouse(work / "warehouse"),
        raced=found,
    )
    seconds = time.perf_counter() - started
    race = outcome.race
    racing = settings.racing
    lines = [
        f"search (seed {racing.seed}, {outcome.search_id}): {len(race.rounds)} rounds of "
        f"{', '.join(str(len(r.round.questions)) for r in race.rounds)} questions in {seconds:,.0f} s",
        f"  winning tier ({len(outcome.winning_tier)}: no test told them from the best in the race): "
        f"{', '.join(outcome.winning_tier)}; in the full grid's tier 1: "
        f"{sum(1 for k in outcome.winning_tier if k in tier_1)} of {len(outcome.winning_tier)}",
    ]
    best = outcome.winners[0] if outcome.winners else None
    in_tier = best in tier_1
    if best is not None:
        same = "the same setup" if best == ranked[0] else f"the full grid's best is {ranked[0]}"
        lines.append(
            f"  confirmed winner: {best} {race.fates[best].mean:.4f} on every question over the whole corpus "
            f"(full grid {values[best].mean():.4f}; {same}); in the full grid's tier 1: "
            f"{'yes' if in_tier else 'NO'}"
        )
    eliminated = [f for f in race.fates.values() if f.status == "eliminated"]
    by_round = Counter(f.round for f in eliminated)
    lines.append(
        "  eliminated per round: "
        + ", ".join(
            f"round {r.number} ({len(r.questions)} questions): {by_round[r.number]}"
            for r in (report.round for report in race.rounds)
            if by_round[r.number]
        )
    )
    wrongly = [f.key for f in eliminated if f.key in tier_1]
    lines.append(f"  eliminated though in the full grid's tier 1: {', '.join(wrongly) or 'none'}")
    spend = race.spend
    return SearchResult(racing.seed, lines, spend.texts_indexed, spend.texts_embedded, spend.queries, in_tier)


if __name__ == "__main__":
    sys.exit(main())
