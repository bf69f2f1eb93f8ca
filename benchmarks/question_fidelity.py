"""Benchmark: do offline generated questions rank setups as natural questions do?

Every configured setup (chunk config x retrieval profile) is scored on the natural questions of a
benchmark (``chroma_general``: 276 questions written for Chroma's public chunking benchmark, or any
questions CSV given by ``--questions``) and on the questions each offline generator writes over the same
corpora, through the pipeline's own steps (``cut_corpus``, ``build_indexes``, ``retrieve``,
``token_level_result``) and the data loader of benchmarks/chroma_general.py. Each question set's setups
are ranked by the leaderboard's objective (data/monitoring.yaml, ``span_recall_1000t`` by default) with
the leaderboard's own ranking and tiers (core/leaderboard/ranking.py). Printed per corpus and overall:
Kendall's tau and Spearman's rho between the natural ranking and each generator's, the mean objective per
retriever family (dense, hybrid, keyword), natural vs generated, whether the generator's winner is in the
natural questions' tier 1, and the time taken (generation, evaluation). For scale, the natural split-half
baseline: the median tau between the rankings of two random halves of the natural questions.

The goals a generator is held to (issue 31): tau >= 0.8, every family's mean within 0.03 of the natural
one, and its winner in the natural tier 1.

    python benchmarks/question_fidelity.py [--generators known-item,...] [--data DIR] [--questions FILE]
        [--corpora NAME,...] [--chunk-configs FILE] [--only NAME,...] [--profiles FILE]
        [--only-profiles NAME,...] [--monitoring FILE] [--limit-questions N] [--split-halves N]
        [--seeds N,...] [--cache-dir DIR]

With several seeds (``--seeds 5,7,13,21,99``) each generator writes one question set per seed, every set
is scored on the same indexes, and a summary gives the spread over seeds: the goals are judged on the
median, as the split-half baseline is (one seed's questions are one sample, as one half is).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO, get_args

import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chroma_general import (
    DEFAULT_CHUNK_CONFIGS,
    DEFAULT_DATA,
    DEFAULT_PROFILES,
    PROJECT_ROOT,
    BenchmarkData,
    corpus_name,
    default_embedder,
    describe_data,
    load_benchmark,
    select_by_name,
    select_configs,
    select_profiles,
    skip_reason,
)

from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.evaluation.costs import CONTEXT_TOKENS_MEAN
from rag_eval_pipeline.core.evaluation.evaluation import token_level_result
from rag_eval_pipeline.core.generation.settings import OfflineGenerator, TokenLevelSettings
from rag_eval_pipeline.core.generation.synthesis import synthesize_token_level
from rag_eval_pipeline.core.leaderboard.ranking import rank_board
from rag_eval_pipeline.core.metrics.context_budget import CONTEXT_TOKENS
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import build_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.settings.configs import (
    ChunkConfig,
    RetrievalProfile,
    load_chunk_configs,
    load_profiles,
)
from rag_eval_pipeline.core.settings.monitoring_settings import LeaderboardSettings, MonitoringSettings
from rag_eval_pipeline.core.settings.settings_file import load_settings
from rag_eval_pipeline.core.vector_store.engines import DEFAULT_ENGINE, open_vector_store

DEFAULT_MONITORING = PROJECT_ROOT / "data/monitoring.yaml"
OFFLINE_GENERATORS: tuple[OfflineGenerator, ...] = get_args(OfflineGenerator)
NATURAL = "natural"
ALL_CORPORA = "overall"
FAMILIES = ("dense", "hybrid", "keyword")
# The goals of issue 31.
GOAL_TAU = 0.8
GOAL_FAMILY_GAP = 0.03
SPLIT_HALVES = 200
SPLIT_SEED = 31
# The per-question columns kept from each evaluation.
VALUE = "value"

Setup = tuple[str, str]  # (chunk config, profile)


def family(profile: RetrievalProfile) -> str:
    """dense (knn only), keyword (bm25 only) or hybrid (both, fused)."""
    if profile.is_fused:
        return "hybrid"
    return "dense" if profile.retrievers == ("knn",) else "keyword"


@dataclass(frozen=True)
class QuestionSet:
    """Questions to rank the setups with: the natural ones, or one generator's."""

    name: str
    examples: tuple[TokenLevelExample, ...]
    seconds: float = 0.0  # to generate them (0 for the natural ones)
    removed: str = ""  # what the generator's checks and each filter removed (Synthesized.describe_filters)

    def corpus_counts(self) -> Counter[str]:
        return Counter(question_corpus(e) for e in self.examples)


def question_corpus(example: TokenLevelExample) -> str:
    """The corpus (file stem) a question is about: its references' documents, joined by '+'."""
    return "+".join(sorted({corpus_name(s.doc_id) for s in example.relevant_spans}))


def generate(
    generator: OfflineGenerator,
    corpus: Corpus,
    counts: Mapping[str, int],
    embedder: Embedder,
    seed: int,
    name: str | None = None,
) -> QuestionSet:
    """As many questions about each corpus (``counts``: corpus name -> questions) as asked, by
    ``generator`` through the pipeline's own synthesis (the generator, then the default filters of
    data/generation.yaml's ``token_level``), one corpus at a time: the style of the questions is compared,
    not how a generator shares its questions among the corpora."""
    settings = replace(TokenLevelSettings(), generator=generator, seed=seed)
    examples: list[TokenLevelExample] = []
    removed: Counter[str] = Counter()
    setting: dict[str, str] = {}
    started = time.perf_counter()
    for corpus_of_set, n in sorted(counts.items()):
        documents = tuple(d for d in corpus if corpus_name(d.doc_id) == corpus_of_set)
        made = synthesize_token_level(
            Corpus(documents, root=corpus.root), replace(settings, n_questions=n), embedder
        )
        examples += made.dataset.examples
        for step in made.filters:
            removed[step.name] += step.removed
            setting[step.name] = step.setting
    seconds = time.perf_counter() - started
    described = ", ".join(f"{step} ({setting[step]}) {count}" for step, count in removed.items())
    return QuestionSet(name or generator, tuple(examples), seconds, described)


@dataclass(frozen=True)
class Scores:
    """Per question set, per setup: one row per question (question_id, corpus, value, context_tokens)."""

    values: Mapping[str, Mapping[Setup, pd.DataFrame]]
    seconds: Mapping[str, float]  # evaluation time per question set (retrieval and scoring)
    index_seconds: float  # chunking and indexing, shared by every question set


def score_setups(
    configs: Sequence[ChunkConfig],
    profiles: Sequence[RetrievalProfile],
    corpus: Corpus,
    question_sets: Sequence[QuestionSet],
    embedder: Embedder,
    objective: str,
) -> Scores:
    """Every question set on every setup: each chunk config is cut and indexed once (both sides), then
    every profile answers every question set and its hits are scored on ``objective``."""
    values: dict[str, dict[Setup, pd.DataFrame]] = {s.name: {} for s in question_sets}
    seconds: dict[str, float] = {}
    index_seconds = 0.0
    with tempfile.TemporaryDirectory(prefix="question-fidelity-") as folder:
        store = open_vector_store(DEFAULT_ENGINE, path=folder)
        try:
            for config in configs:
                started = time.perf_counter()
                chunk_set = cut_corpus(build_chunker(config, embedder=embedder), corpus, config.name)
                indexes = build_indexes(chunk_set, embedder, store)
                index_seconds += time.perf_counter() - started
                for question_set in question_sets:
                    started = time.perf_counter()
                    examples = question_set.examples
                    queries = [Query(e.question_id, e.query) for e in examples]
                    for profile in profiles:
                        run = retrieve(profile, indexes, queries)
                        result = token_level_result(
                            examples,
                            run.hits,
                            chunk_set.chunks,
                            profile.top_k,
                            corpus,
                            [objective, CONTEXT_TOKENS],
                        )
                        values[question_set.name][(config.name, profile.name)] = pd.DataFrame(
                            {
                                "question_id": [r.question_id for r in result.raw_results],
                                "corpus": [question_corpus(e) for e in examples],
                                VALUE: [float(r.metrics[objective]) for r in result.raw_results],
                                CONTEXT_TOKENS: [
                                    float(r.metrics[CONTEXT_TOKENS]) for r in result.raw_results
                                ],
                            }
                        )
                    seconds[question_set.name] = (
                        seconds.get(question_set.name, 0.0) + time.perf_counter() - started
                    )
        finally:
            store.close()
    return Scores(values, dict(seconds), index_seconds)


@dataclass(frozen=True)
class Ranking:
    """The setups as the leaderboard ranks them on one question set: best first, with tiers."""

    order: tuple[Setup, ...]
    means: Mapping[Setup, float]
    tiers: Mapping[Setup, int]

    @property
    def winner(self) -> Setup:
        return self.order[0]

    def tier_1(self) -> list[Setup]:
        return [s for s in self.order if self.tiers.get(s) == 1]

    def position(self, setup: Setup) -> int:
        return self.order.index(setup)


def rank(
    per_setup: Mapping[Setup, pd.DataFrame], leaderboard: LeaderboardSettings, with_tiers: bool = True
) -> Ranking:
    """The leaderboard's ranking (core/leaderboard/ranking.py: the objective's mean, ties to the smaller
    context, then by name) and, ``with_tiers``, its statistical tiers, of these setups' question rows."""
    objective = leaderboard.column
    rows = pd.DataFrame(
        [
            {
                "chunk_config": config,
                "profile": profile,
                f"{objective}_mean": float(frame[VALUE].mean()),
                CONTEXT_TOKENS_MEAN: float(frame[CONTEXT_TOKENS].mean()),
                "n_questions": len(frame),
                "dataset_sha256": "one question set",
                "evaluation_mode": "full",
                "metrics_created_at": pd.Timestamp(0, tz="UTC"),
            }
            for (config, profile), frame in per_setup.items()
        ]
    )
    questions = (
        {setup: frame.rename(columns={VALUE: objective}) for setup, frame in per_setup.items()}
        if with_tiers
        else None
    )
    board = rank_board(rows, None, leaderboard, questions)
    order = tuple((str(r.chunk_config), str(r.profile)) for r in board.itertuples())
    means = {setup: float(frame[VALUE].mean()) for setup, frame in per_setup.items()}
    tiers = {
        (str(chunk_config), str(profile)): int(tier)
        for chunk_config, profile, tier in zip(
            board["chunk_config"], board["profile"], board["tier"], strict=True
        )
        if not pd.isna(tier)
    }
    return Ranking(order, means, tiers)


def rank_agreement(a: Ranking, b: Ranking) -> tuple[float, float]:
    """Kendall's tau and Spearman's rho between two rankings of the same setups (by rank position)."""
    setups = list(a.order)
    x = [a.position(s) for s in setups]
    y = [b.position(s) for s in setups]
    return float(stats.kendalltau(x, y).statistic), float(stats.spearmanr(x, y).statistic)


def family_means(ranking: Ranking, families: Mapping[Setup, str]) -> dict[str, float]:
    """The mean objective over the setups of each retriever family (NaN for a family not configured)."""
    found = {}
    for name in FAMILIES:
        values = [m for s, m in ranking.means.items() if families[s] == name]
        found[name] = statistics.fmean(values) if values else float("nan")
    return found


def of_corpus(per_setup: Mapping[Setup, pd.DataFrame], corpus: str) -> dict[Setup, pd.DataFrame]:
    if corpus == ALL_CORPORA:
        return dict(per_setup)
    return {s: f[f["corpus"] == corpus].reset_index(drop=True) for s, f in per_setup.items()}


def split_half_taus(
    per_setup: Mapping[Setup, pd.DataFrame], leaderboard: LeaderboardSettings, n_splits: int, seed: int
) -> list[float]:
    """Kendall's tau between the rankings of two random halves of the questions, ``n_splits`` times."""
    first = next(iter(per_setup.values()))
    ids = list(first["question_id"])
    if len(ids) < 4:
        return []
    rng = random.Random(seed)
    taus = []
    for _ in range(n_splits):
        shuffled = ids[:]
        rng.shuffle(shuffled)
        half = set(shuffled[: len(ids) // 2])
        halves = [
            {s: f[f["question_id"].isin(half) == side] for s, f in per_setup.items()}
            for side in (True, False)
        ]
        a, b = (rank(h, leaderboard, with_tiers=False) for h in halves)
        taus.append(rank_agreement(a, b)[0])
    return taus


@dataclass(frozen=True)
class Fidelity:
    """How one generator's questions rank the setups against the natural ones, on one corpus (or all)."""

    generator: str
    corpus: str
    n_natural: int
    n_generated: int
    tau: float
    spearman: float
    natural_families: Mapping[str, float]
    generated_families: Mapping[str, float]
    winner: Setup
    natural_winner: Setup
    natural_tier_1: tuple[Setup, ...]

    @property
    def winner_in_tier_1(self) -> bool:
        return self.winner in self.natural_tier_1

    @property
    def largest_family_gap(self) -> float:
        gaps = [
            abs(self.generated_families[f] - self.natural_families[f])
            for f in FAMILIES
            if not pd.isna(self.natural_families[f])
        ]
        return max(gaps, default=float("nan"))

    @property
    def goals_met(self) -> bool:
        return self.tau >= GOAL_TAU and self.largest_family_gap <= GOAL_FAMILY_GAP and self.winner_in_tier_1


def fidelity(
    generator: str,
    corpus: str,
    natural: Mapping[Setup, pd.DataFrame],
    generated: Mapping[Setup, pd.DataFrame],
    families: Mapping[Setup, str],
    leaderboard: LeaderboardSettings,
) -> Fidelity | None:
    """None when either side has no question about ``corpus``."""
    natural, generated = of_corpus(natural, corpus), of_corpus(generated, corpus)
    n_natural = len(next(iter(natural.values())))
    n_generated = len(next(iter(generated.values())))
    if not n_natural or not n_generated:
        return None
    a, b = rank(natural, leaderboard), rank(generated, leaderboard)
    tau, rho = rank_agreement(a, b)
    return Fidelity(
        generator,
        corpus,
        n_natural,
        n_generated,
        tau,
        rho,
        family_means(a, families),
        family_means(b, families),
        b.winner,
        a.winner,
        tuple(a.tier_1()),
    )


def _setup(setup: Setup) -> str:
    return f"{setup[0]} x {setup[1]}"


def format_rankings(rankings: Mapping[str, Ranking]) -> str:
    """The overall ranking of each question set side by side: rank, mean (tier)."""
    natural = rankings[NATURAL]
    names = list(rankings)
    width = max(len(_setup(s)) for s in natural.order)
    lines = [
        "Overall ranking by question set: rank. mean (tier)",
        f"{'setup':<{width}}  " + "  ".join(f"{n:>18}" for n in names),
    ]
    for setup in natural.order:
        cells = []
        for name in names:
            r = rankings[name]
            cells.append(
                f"{r.position(setup) + 1:>2}. {r.means[setup]:.3f} ({r.tiers.get(setup, '-')})".rjust(18)
            )
        lines.append(f"{_setup(setup):<{width}}  " + "  ".join(cells))
    return "\n".join(lines)


def format_fidelity(results: Sequence[Fidelity], baselines: Mapping[str, list[float]]) -> str:
    header = (
        f"{'generator':<14} {'corpus':<20} {'n nat':>5} {'n gen':>5} {'tau':>6} {'rho':>6} "
        + " ".join(f"{f + ' nat/gen':>15}" for f in FAMILIES)
        + f" {'max gap':>7} {'winner in tier 1':>16} {'goals':>5}"
    )
    lines = ["Fidelity to the natural questions (goals: tau >= 0.8, family gap <= 0.03, winner in tier 1)"]
    lines += [header, "-" * len(header)]
    for r in results:
        families = " ".join(
            f"{r.natural_families[f]:.3f}/{r.generated_families[f]:.3f}".rjust(15) for f in FAMILIES
        )
        lines.append(
            f"{r.generator:<14} {r.corpus:<20} {r.n_natural:>5} {r.n_generated:>5} {r.tau:>6.2f} "
            f"{r.spearman:>6.2f} {families} {r.largest_family_gap:>7.3f} "
            f"{('yes' if r.winner_in_tier_1 else 'no'):>16} {('met' if r.goals_met else 'no'):>5}"
        )
    lines.append("")
    for r in results:
        lines.append(
            f"{r.generator} on {r.corpus}: winner {_setup(r.winner)}; natural winner {_setup(r.natural_winner)}, "
            f"natural tier 1 holds {len(r.natural_tier_1)}"
        )
    lines.append("")
    for corpus, taus in baselines.items():
        if taus:
            q1, median, q3 = statistics.quantiles(taus, n=4) if len(taus) > 1 else (taus[0],) * 3
            lines.append(
                f"natural split-half baseline on {corpus}: median tau {median:.2f} (quartiles {q1:.2f}, "
                f"{q3:.2f}) over {len(taus)} random halves"
            )
    return "\n".join(lines)


def set_name(generator: str, seed: int, seeds: Sequence[int]) -> str:
    """A generator's question set is named for it, and for its seed when several are compared."""
    return f"{generator}@{seed}" if len(seeds) > 1 else generator


@dataclass(frozen=True)
class SeedSpread:
    """One generator's fidelity on one corpus (or all) over its seeds: the spread of one sample to the next."""

    generator: str
    corpus: str
    results: tuple[Fidelity, ...]  # one per seed

    @property
    def taus(self) -> list[float]:
        return [r.tau for r in self.results]

    @property
    def gaps(self) -> list[float]:
        return [r.largest_family_gap for r in self.results]

    @property
    def winners_in_tier_1(self) -> int:
        return sum(r.winner_in_tier_1 for r in self.results)

    @property
    def goals_met_on_median(self) -> bool:
        """The median tau and the median largest gap meet the goals and the winner is in the natural tier 1
        for at least half the seeds: the generator judged as the baseline is, on its typical sample."""
        return (
            statistics.median(self.taus) >= GOAL_TAU
            and statistics.median(self.gaps) <= GOAL_FAMILY_GAP
            and 2 * self.winners_in_tier_1 >= len(self.results)
        )


def seed_spreads(
    results: Sequence[Fidelity], generators: Sequence[str], seeds: Sequence[int]
) -> list[SeedSpread]:
    """Per generator and corpus, its results over ``seeds`` (in the order of ``results``)."""
    spreads = []
    for generator in generators:
        names = {set_name(generator, seed, seeds) for seed in seeds}
        corpora = dict.fromkeys(r.corpus for r in results if r.generator in names)
        for corpus in corpora:
            found = tuple(r for r in results if r.generator in names and r.corpus == corpus)
            spreads.append(SeedSpread(generator, corpus, found))
    return spreads


def format_seed_spreads(spreads: Sequence[SeedSpread], seeds: Sequence[int]) -> str:
    lines = [
        f"Over {len(seeds)} seeds ({', '.join(map(str, seeds))}): median (min-max); goals judged on the median"
    ]
    header = (
        f"{'generator':<14} {'corpus':<20} {'tau':>17} {'max gap':>19} {'winner in tier 1':>16} "
        f"{'seeds met':>9} {'goals':>5}"
    )
    lines += [header, "-" * len(header)]
    for spread in spreads:
        taus, gaps = spread.taus, spread.gaps
        met = sum(r.goals_met for r in spread.results)
        lines.append(
            f"{spread.generator:<14} {spread.corpus:<20} "
            f"{f'{statistics.median(taus):.2f} ({min(taus):.2f}-{max(taus):.2f})':>17} "
            f"{f'{statistics.median(gaps):.3f} ({min(gaps):.3f}-{max(gaps):.3f})':>19} "
            f"{f'{spread.winners_in_tier_1} of {len(spread.results)}':>16} {f'{met} of {len(spread.results)}':>9} "
            f"{('met' if spread.goals_met_on_median else 'no'):>5}"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--generators",
        default=",".join(OFFLINE_GENERATORS),
        metavar="NAME,...",
        help=f"offline generators to compare (default: all, {', '.join(OFFLINE_GENERATORS)})",
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="folder with corpora/ and questions.csv"
    )
    parser.add_argument("--questions", type=Path, default=None, metavar="FILE", help="natural questions CSV")
    parser.add_argument("--corpora", default=None, metavar="NAME,...", help="only these corpora")
    parser.add_argument("--chunk-configs", type=Path, default=DEFAULT_CHUNK_CONFIGS)
    parser.add_argument("--only", default=None, metavar="NAME,...", help="only these chunk configs")
    parser.add_argument("--profiles", type=Path, default=DEFAULT_PROFILES)
    parser.add_argument("--only-profiles", default=None, metavar="NAME,...", help="only these profiles")
    parser.add_argument(
        "--monitoring",
        type=Path,
        default=DEFAULT_MONITORING,
        help="the settings file whose leaderboard section is the objective (default data/monitoring.yaml)",
    )
    parser.add_argument(
        "--limit-questions", type=int, default=None, metavar="N", help="only the first N natural questions"
    )
    parser.add_argument(
        "--n-questions",
        type=int,
        default=None,
        metavar="N",
        help="questions each generator is asked for (default: as many as there are natural questions)",
    )
    parser.add_argument("--seed", type=int, default=13, help="the generators' seed")
    parser.add_argument(
        "--seeds",
        default=None,
        metavar="N,...",
        help="several seeds: one question set per generator and seed, and the spread over seeds",
    )
    parser.add_argument(
        "--split-halves", type=int, default=SPLIT_HALVES, metavar="N", help="random halves for the baseline"
    )
    parser.add_argument(
        "--cache-dir", type=Path, default=None, help="embedding cache folder (default: a temporary one)"
    )
    args = parser.parse_args(argv)
    for option in ("limit_questions", "n_questions"):
        if getattr(args, option) is not None and getattr(args, option) <= 0:
            parser.error(f"--{option.replace('_', '-')} must be >= 1")
    if args.split_halves < 0:
        parser.error("--split-halves must be >= 0")
    try:
        args.seeds = [int(v) for v in args.seeds.split(",")] if args.seeds else [args.seed]
    except ValueError:
        parser.error(f"--seeds takes whole numbers separated by commas, not {args.seeds!r}")
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds names a seed twice: {args.seeds}")
    return args


def main(
    argv: Sequence[str] | None = None, embedder: Embedder | None = None, out: TextIO | None = None
) -> int:
    """Run the benchmark; ``embedder`` defaults to the real MiniLM model (tests pass a cheap one)."""
    out = out or sys.stdout
    args = parse_args(argv)
    total_started = time.perf_counter()
    try:
        configs = select_configs(load_chunk_configs(args.chunk_configs), args.only)
        selected = select_profiles(load_profiles(args.profiles), args.only_profiles)
        generators = select_by_name(
            OFFLINE_GENERATORS, args.generators, "--generators", "offline generator(s)", lambda g: g
        )
        leaderboard = load_settings(args.monitoring, MonitoringSettings).leaderboard
        data = load_benchmark(args.data, args.questions, args.corpora)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    profiles = [p for p in selected if skip_reason(p) is None]
    if not profiles:
        print("error: every selected profile needs a reranker or an LLM; select others", file=sys.stderr)
        return 2
    natural_examples = data.dataset.examples[: args.limit_questions]
    n_questions = args.n_questions or len(natural_examples)
    model = embedder or default_embedder()
    with tempfile.TemporaryDirectory(prefix="question-fidelity-cache-") as temporary:
        cache = EmbeddingCache((args.cache_dir or Path(temporary)) / "embeddings.sqlite")
        try:
            cached = CachedEmbedder(model, cache)
            return run(
                args,
                data,
                natural_examples,
                n_questions,
                configs,
                profiles,
                generators,
                leaderboard,
                cached,
                out,
                total_started,
            )
        finally:
            cache.close()


def run(
    args: argparse.Namespace,
    data: BenchmarkData,
    natural_examples: Sequence[TokenLevelExample],
    n_questions: int,
    configs: Sequence[ChunkConfig],
    profiles: Sequence[RetrievalProfile],
    generators: Sequence[OfflineGenerator],
    leaderboard: LeaderboardSettings,
    embedder: Embedder,
    out: TextIO,
    total_started: float,
) -> int:
    objective = leaderboard.column
    print(f"question fidelity: {args.data}", file=out)
    print(describe_data(data), file=out)
    print(
        f"setups: {len(configs)} chunk configs x {len(profiles)} profiles ({', '.join(p.name for p in profiles)}); "
        f"objective {objective} (tier alpha {leaderboard.alpha:g}); embedder {embedder.model_id}",
        file=out,
        flush=True,
    )
    sets = [QuestionSet(NATURAL, tuple(natural_examples))]
    asked = sets[0].corpus_counts()
    if args.n_questions is not None:
        asked = Counter(dict.fromkeys(asked, args.n_questions))
    seeds: list[int] = args.seeds
    for generator in generators:
        for seed in seeds:
            name = set_name(generator, seed, seeds)
            sets.append(generate(generator, data.corpus, asked, embedder, seed, name))
    for s in sets:
        listed = ", ".join(f"{c} {n}" for c, n in sorted(s.corpus_counts().items()))
        line = f"{s.name}: {len(s.examples)} questions ({listed})"
        if s.name != NATURAL:
            line += (
                f"; {sum(asked.values())} asked for, generated in {s.seconds:.1f} s; removed by: {s.removed}"
            )
        print(line, file=out, flush=True)
    if any(not s.examples for s in sets):
        print("error: a question set is empty; nothing to rank", file=sys.stderr)
        return 1
    scores = score_setups(configs, profiles, data.corpus, sets, embedder, objective)
    print(
        f"evaluation: chunking and indexing {scores.index_seconds:.1f} s (once); "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in scores.seconds.items())
        + " (retrieval and scoring of every setup)",
        file=out,
    )
    families: dict[Setup, str] = {(str(c.name), str(p.name)): family(p) for c in configs for p in profiles}
    rankings = {s.name: rank(scores.values[s.name], leaderboard) for s in sets}
    print("\n" + format_rankings(rankings), file=out)
    corpora = sorted(sets[0].corpus_counts())
    scopes = [*corpora, ALL_CORPORA] if len(corpora) > 1 else [ALL_CORPORA]
    natural = scores.values[NATURAL]
    results = [
        found
        for question_set in sets[1:]
        for corpus in scopes
        if (
            found := fidelity(
                question_set.name, corpus, natural, scores.values[question_set.name], families, leaderboard
            )
        )
    ]
    baselines = {
        corpus: split_half_taus(of_corpus(natural, corpus), leaderboard, args.split_halves, SPLIT_SEED)
        for corpus in scopes
    }
    print("\n" + format_fidelity(results, baselines), file=out)
    if len(seeds) > 1:
        print("\n" + format_seed_spreads(seed_spreads(results, generators, seeds), seeds), file=out)
    print(f"\ntotal runtime {time.perf_counter() - total_started:.1f} s", file=out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
