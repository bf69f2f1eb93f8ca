"""How many questions an evaluation needs, said before any is generated (`rag-eval questions plan`).

The power figures (core/leaderboard/power.py) need the spread of the per-question differences between
close setups, which only an evaluation measures. So the plan runs a pilot, the cheapest one that
measures it:

- **questions**: the offline generator (the configured token-level one when it needs no LLM, else the
  offline default) with the settings of data/generation.yaml, as many as they ask for (``--pilot N``:
  another number). With an offline generator configured, these are the very questions a run makes.
- **setups**: the chunk config cheapest to embed (core/project/workload.py's estimate; ties go to the first in
  the file; a config applied to some documents only is not a candidate while a whole-corpus one is),
  with every profile that calls no LLM and no reranker (dense, keyword, hybrid): one dense index, and
  the profiles' per-question objective values. Fewer than two such setups: the next cheapest chunk
  config joins.
- **spread**: the standard deviation of the per-question differences between the pilot's best setup
  and the next that differs from it, as the leaderboard's power line takes it.

From that spread: the questions needed to detect ``detect`` at 80 % power, once if the next setup is the
only one that close (alpha) and once if every other configured setup is (Holm's alpha / m, m = the
configured setups - 1: the bound), and the difference the evaluation's questions now detect (the golden
file's count, or what the generation makes). The pilot's spread is an estimate: setups of different
retriever families usually differ more per question than the best and the next of a full board, so the
plan tends to ask for more questions than the board will need.

Nothing is written but the embeddings, to the embedding cache a run would fill with the same vectors
(the run then embeds nothing twice); the index lives in a temporary folder; no table, no run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from ..chunking import ChunkSet, build_chunker, cut_corpus
from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..errors import ConfigError
from ..generation.question_count import default_question_count
from ..generation.settings import LLM_TOKEN_LEVEL_GENERATORS, TokenLevelSettings
from ..generation.synthesis import synthesize_token_level
from ..leaderboard.power import (
    DEFAULT_DETECT,
    POWER,
    PairedDifferences,
    detectable_difference,
    questions_needed,
)
from ..progress import Progress, no_progress
from ..project.workload import estimate_workload
from ..questions.datasets import TokenLevelExample
from ..retrieval.base import Query
from ..retrieval.indexes import build_indexes
from ..retrieval.profile_retriever import retrieve
from ..settings.configs import ChunkConfig, PipelineConfigs, RetrievalProfile, Retriever
from ..settings.monitoring_settings import LeaderboardSettings
from ..vector_store.base import VectorStore, collection_name
from .evaluation import token_level_result


def check_detect(detect: float) -> float:
    """``--detect``: a difference of the objective's mean, whose values lie in [0, 1]."""
    if not 0 < detect < 1:
        raise ConfigError(
            f"--detect {detect:g}: the difference to detect is a difference of the objective's mean, between "
            "0 and 1 (exclusive), e.g. --detect 0.03"
        )
    return detect


@dataclass(frozen=True)
class PilotScore:
    profile: str
    mean: float


@dataclass(frozen=True)
class Pilot:
    """What the pilot generated and measured: the generator, the questions asked for and kept (and
    the rejections by reason), the setups (best first by the objective's mean), and the per-question
    differences between the best and the next that differs from it (None: every setup agrees on every
    question)."""

    generator: str
    asked: int
    kept: int
    rejected_by_reason: Mapping[str, int]
    chunk_configs: tuple[str, ...]
    scores: tuple[PilotScore, ...]  # "chunk config x profile" labels when several chunk configs
    next_profile: str | None
    differences: PairedDifferences | None


@dataclass(frozen=True)
class QuestionSets:
    """Which questions the evaluation uses now (data/generation.yaml evaluate_on): the golden file's
    count when it uses that file, whether it uses the synthetic set, and why they cannot be counted
    ("": they can; e.g. a golden file asked for and missing)."""

    golden: int | None
    golden_file: str
    synthetic: bool
    problem: str = ""


@dataclass(frozen=True)
class EvaluationQuestions:
    """The questions the evaluation uses now: how many (None: not known) and where from."""

    count: int | None
    source: str


@dataclass(frozen=True)
class QuestionPlan:
    detect: float
    objective: str
    alpha: float
    n_setups: int  # configured chunk configs x profiles
    pilot: Pilot
    evaluation: EvaluationQuestions

    @property
    def challengers(self) -> int:
        return max(1, self.n_setups - 1)

    def needed(self, comparisons: int) -> int | None:
        d = self.pilot.differences
        return None if d is None else questions_needed(self.detect, d.sd, self.alpha, comparisons)

    def detectable(self, n: int, comparisons: int) -> float | None:
        d = self.pilot.differences
        return None if d is None else detectable_difference(d.sd, n, self.alpha, comparisons)

    def lines(self) -> list[str]:
        """The plan as the terminal prints it."""
        p = self.pilot
        rejected = ", ".join(f"{n} {reason}" for reason, n in sorted(p.rejected_by_reason.items()))
        scores = ", ".join(f"{s.profile} {s.mean:.3f}" for s in p.scores)
        configs = " and ".join(p.chunk_configs)
        cheapest = "the cheapest chunk config to embed" if len(p.chunk_configs) == 1 else "the cheapest two"
        lines = [
            f"pilot: {p.kept} {p.generator} questions ({p.asked} asked for"
            + (f"; rejected: {rejected}" if rejected else "")
            + f") on {configs} ({cheapest}), {len(p.scores)} setups",
            f"  {self.objective}: {scores}",
        ]
        if p.differences is None or p.next_profile is None:
            lines.append(
                "  every pilot setup scores the same on every question: no spread to size a difference by; "
                "try more questions (--pilot N)"
            )
            return lines
        best = p.scores[0].profile
        lines.append(
            f"  sd of the per-question differences between the best and the next, {best} and "
            f"{p.next_profile}: {p.differences.sd:.3f} over {p.differences.n} questions"
        )
        one, every = self.needed(1), self.needed(self.challengers)
        m = self.challengers
        lines.append(
            f"to detect a difference of {self.detect:.3f} in {self.objective} at {POWER * 100:g} % power: "
            f"{count(one)} questions if the next setup is the only one that close (two-sided, alpha "
            f"{self.alpha:g}), {count(every)} if all {m} other setups of the {self.n_setups} configured "
            f"are (Holm, alpha {self.alpha:g}/{m})"
        )
        lines.append(self.evaluation_line())
        return lines

    def evaluation_line(self) -> str:
        n = self.evaluation.count
        if n is None:
            return f"the evaluation's questions: not counted, {self.evaluation.source}"
        now = f"the evaluation's {n} questions now ({self.evaluation.source})"
        one, every = self.detectable(n, 1), self.detectable(n, self.challengers)
        if one is None:
            return f"{now} are too few to detect any difference at {POWER * 100:g} % power"
        shared = f", {every:.3f} at alpha {self.alpha:g}/{self.challengers}" if every is not None else ""
        return f"{now} detect a difference of {one:.3f} at {POWER * 100:g} % power{shared}"


def count(needed: int | None) -> str:
    return "no number of" if needed is None else f"{needed:,}"


def pilot_generation(settings: TokenLevelSettings, pilot_size: int | None) -> TokenLevelSettings:
    """The configured token-level settings with an offline generator (the configured one unless it needs
    an LLM; then the default) and ``pilot_size`` questions (None: the configured number)."""
    generator = settings.generator
    if generator in LLM_TOKEN_LEVEL_GENERATORS:
        generator = TokenLevelSettings().generator
    return replace(settings, generator=generator, n_questions=pilot_size or settings.n_questions)


def requested_questions(corpus: Corpus, settings: TokenLevelSettings) -> int:
    """How many questions the configured generator asks for, before de-duplication and filtering."""
    return default_question_count(corpus, settings).total


def pilot_setups(
    corpus: Corpus, configs: PipelineConfigs
) -> list[tuple[ChunkConfig, tuple[RetrievalProfile, ...]]]:
    """The chunk configs (cheapest to embed first) and the profiles the pilot evaluates on each."""
    cheap = tuple(p for p in configs.profiles if p.reranker is None and not p.query_rewrite_enabled)
    source = configs.sources.get("profiles", "the profiles file")
    if not cheap:
        raise ConfigError(
            f"a plan evaluates profiles that call no LLM and no reranker, and {source} has none: add one "
            "(e.g. a dense top_k 5 profile)"
        )
    whole = [c for c in configs.chunk_configs if c.documents is None] or list(configs.chunk_configs)
    cost = {s.stage: s.embedded_characters for s in estimate_workload(corpus, whole).stages}
    order = sorted(whole, key=lambda c: cost[str(c.name)])  # stable: ties keep the file's order
    chosen = [(order[0], cheap)]
    if len(cheap) < 2 and len(order) > 1:
        chosen.append((order[1], cheap[:1]))
    if sum(len(profiles) for _, profiles in chosen) < 2:
        raise ConfigError(
            "a plan compares two setups, and the config files give one without an LLM or a reranker: add a "
            f"chunk config or a profile ({source})"
        )
    return chosen


def run_pilot(
    corpus: Corpus,
    configs: PipelineConfigs,
    settings: TokenLevelSettings,
    objective: str,
    embedder: Embedder,
    store: VectorStore,
    *,
    root: Path | None = None,
    progress: Progress = no_progress,
) -> Pilot:
    """Generate the pilot questions offline and evaluate the pilot setups on them (module docstring)."""
    synthesized = synthesize_token_level(corpus, settings, embedder, progress=progress, name="pilot")
    examples = synthesized.dataset.examples
    asked = requested_questions(corpus, settings)
    if len(examples) < 2:
        rejected = ", ".join(f"{n} {why}" for why, n in synthesized.rejected_by_reason.items())
        raise ConfigError(
            f"the pilot's {synthesized.generator} generator made {len(examples)} usable questions of "
            f"{asked} asked for ({f'rejected: {rejected}' if rejected else 'no passage long enough'}"
            "): too few to measure a spread; ask for more with --pilot N, or see token_level in "
            "data/generation.yaml (passage_min_chars: the shortest passage a question is made from)"
        )
    setups = pilot_setups(corpus, configs)
    several = len(setups) > 1
    values: dict[str, pd.Series] = {}
    for config, profiles in setups:
        for profile, series in evaluate(
            corpus, config, profiles, examples, objective, embedder, store, root, progress
        ):
            values[f"{config.name} x {profile}" if several else profile] = series
    means = sorted(values, key=lambda name: (-float(values[name].mean()), list(values).index(name)))
    best = values[means[0]]
    following = next(
        ((name, d) for name in means[1:] if (d := PairedDifferences.of(best, values[name])).differ), None
    )
    return Pilot(
        synthesized.generator,
        asked,
        len(examples),
        synthesized.rejected_by_reason,
        tuple(str(config.name) for config, _ in setups),
        tuple(PilotScore(name, float(values[name].mean())) for name in means),
        following[0] if following else None,
        following[1] if following else None,
    )


def evaluate(
    corpus: Corpus,
    config: ChunkConfig,
    profiles: Sequence[RetrievalProfile],
    examples: Sequence[TokenLevelExample],
    objective: str,
    embedder: Embedder,
    store: VectorStore,
    root: Path | None,
    progress: Progress,
) -> list[tuple[str, pd.Series]]:
    """Each profile's per-question ``objective`` on the chunk config, by the pipeline's own steps (cut,
    index, retrieve, score: core/evaluation/evaluation.py), indexed by question id."""
    chunks = cut_corpus(build_chunker(config, embedder, root), corpus, config.name).chunks
    sides: tuple[Retriever, ...] = tuple(
        side for side in ("knn", "bm25") if any(side in p.retrievers for p in profiles)
    )
    indexes = build_indexes(
        ChunkSet(config.name, chunks),
        embedder,
        store,
        collection=collection_name(f"plan-{config.name}", embedder.model_id),
        retrievers=sides,
        progress=progress,
    )
    queries = [Query(e.question_id, e.query) for e in examples]
    found = []
    for profile in profiles:
        run = retrieve(profile, indexes, queries, progress=progress)
        result = token_level_result(examples, run.hits, chunks, profile.top_k, corpus, [objective])
        found.append(
            (
                str(profile.name),
                pd.Series(
                    [float(r.metrics[objective]) for r in result.raw_results],
                    index=[str(r.question_id) for r in result.raw_results],
                ),
            )
        )
    return found


def plan_questions(
    corpus: Corpus,
    configs: PipelineConfigs,
    generation: TokenLevelSettings,
    leaderboard: LeaderboardSettings,
    sets: QuestionSets,
    embedder: Embedder,
    store: VectorStore,
    *,
    detect: float = DEFAULT_DETECT,
    pilot_size: int | None = None,
    root: Path | None = None,
    progress: Progress = no_progress,
) -> QuestionPlan:
    """The plan of the module docstring, for the evaluation's question ``sets``."""
    check_detect(detect)
    settings = pilot_generation(generation, pilot_size)
    pilot = run_pilot(
        corpus, configs, settings, leaderboard.column, embedder, store, root=root, progress=progress
    )
    n_setups = len(configs.chunk_configs) * len(configs.profiles)
    evaluation = evaluation_questions(sets, pilot, settings == generation, generation, corpus)
    return QuestionPlan(detect, leaderboard.column, leaderboard.alpha, n_setups, pilot, evaluation)


def evaluation_questions(
    sets: QuestionSets, pilot: Pilot, same: bool, generation: TokenLevelSettings, corpus: Corpus
) -> EvaluationQuestions:
    """How many questions the evaluation uses now: the golden file's, plus the synthetic set's (the
    pilot's kept questions when the pilot was that very generation, else what the configured
    generator asks for, before de-duplication and filtering)."""
    if sets.problem:
        return EvaluationQuestions(None, sets.problem)
    parts: list[tuple[int, str]] = []
    if sets.golden is not None:
        parts.append((sets.golden, f"from {sets.golden_file}"))
    if sets.synthetic:
        made = pilot.kept if same else requested_questions(corpus, generation)
        how = "made" if same else "asked for (before de-duplication and filters)"
        parts.append((made, f"{how} by the {generation.generator} generator of data/generation.yaml"))
    if len(parts) == 1:
        return EvaluationQuestions(parts[0][0], parts[0][1])
    return EvaluationQuestions(sum(n for n, _ in parts), " + ".join(f"{n} {where}" for n, where in parts))
