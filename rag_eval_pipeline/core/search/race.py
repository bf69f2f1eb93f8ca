"""Racing candidates: grow a nested sample of questions and eliminate each candidate as soon as it is
significantly worse than the current best, until the sample is as large as it may grow (every question,
or ``racing.max_sample``: what is left is one statistical tier on that evidence), one candidate is left,
or the budget is spent.

Round r (fidelity.py says what it scores on): every candidate still racing is scored on the round's new
questions, then ranked by its mean objective over all the round's questions (ties: the smaller key).
Each challenger is tested against the best with the leaderboard's paired sign-flip permutation test over
the questions both answered (core/leaderboard/tiers.py), Holm-corrected over the challengers; a
challenger is eliminated when its corrected p-value is at most alpha / R, R the planned rounds. The
Bonferroni split over the rounds keeps the chance that any correct elimination decision is wrong, over
the whole race, at most alpha (each look is a new test on more data; without the split, looking five
times would eliminate tied candidates far more often than alpha). A difference that is not significant
never eliminates: two equal candidates both survive.

The survivors, best first by their mean over the race, are then confirmed: the ``confirm`` best (all
when None) are scored again on every question over the whole corpus (only what an earlier round scored
on a sample of it), and ranked into the leaderboard's tiers at alpha: tier 1 is the search's answer, the
same test and the same alpha as the leaderboard, on the same data. The others survived the race (no test
told them from the best) but are not confirmed: confirming a survivor indexes its chunk config whole,
the largest cost a race can save.

Everything a round scores is stored per candidate and round before the race moves on (``ResultStore``),
so a killed race resumes where it stopped and pays for nothing twice: the decisions are recomputed from
the stored scores, which are the same, so the race takes the same path.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import pandas as pd

from ..evaluation.costs import LATENCY_MS
from ..leaderboard.tiers import compare_with_best, statistical_tiers
from ..metrics.names import CONTEXT_TOKENS
from ..types import ProfileName, QuestionId
from .candidates import Candidate, CandidateKey
from .fidelity import Round
from .settings import SearchBudget

# A stored unit of scores: a round's index, or the survivors' confirmation on the whole corpus.
Unit = int | Literal["final"]
FINAL: Unit = "final"
# The columns of a unit's scores: one row per question.
# (context_tokens and latency_ms as the evaluation names them: core/metrics, core/evaluation/costs.py)
VALUE, FULL_CORPUS = "value", "full_corpus"
SCORE_COLUMNS = ("question_id", VALUE, CONTEXT_TOKENS, LATENCY_MS, FULL_CORPUS)
FateStatus = Literal["tier", "survived", "eliminated", "unfinished"]
RaceStatus = Literal["finished", "budget spent"]
NO_LIMIT = SearchBudget()


@dataclass
class Spend:
    """What a search has paid for, over every run of it (a resumed search adds to it): texts the
    embedding model embedded (the cache's hits are free), distinct chunk texts that entered a dense index,
    questions retrieved (one per candidate and question scored), LLM dollars, and seconds."""

    texts_embedded: int = 0
    texts_indexed: int = 0
    queries: int = 0
    llm_usd: float = 0.0
    seconds: float = 0.0
    # of ``queries``, those the confirmation asked over the whole corpus (counted from the stored scores,
    # like ``queries``): questions the race had asked the same candidates over corpus samples
    confirmation_queries: int = 0


class Scorer(Protocol):
    """Scores candidates sharing a chunk config on ``questions`` over the round's corpus: per profile, one
    row per question with ``SCORE_COLUMNS``. ``spend`` is what this process paid (texts embedded, LLM
    dollars); ``note_indexed`` records what a round indexes for a chunk config whether it is scored now
    or its scores were stored by an earlier run, so ``texts_indexed`` is the same for a resumed search."""

    spend: Spend

    def score(
        self, candidates: Sequence[Candidate], round: Round, questions: Sequence[QuestionId]
    ) -> Mapping[ProfileName, pd.DataFrame]: ...

    def note_indexed(self, candidates: Sequence[Candidate], round: Round) -> None: ...

    def texts_indexed(self) -> int: ...


class ResultStore(Protocol):
    """Where a race keeps its scores and what it paid (core/search/store.py: Parquet in the warehouse)."""

    def load(self, key: CandidateKey, unit: Unit) -> pd.DataFrame | None: ...

    def save(self, key: CandidateKey, unit: Unit, frame: pd.DataFrame) -> None: ...

    def load_spend(self) -> Spend: ...

    def save_spend(self, spend: Spend) -> None: ...


@dataclass(frozen=True)
class Fate:
    """What became of a candidate. ``tier`` for the survivors scored on every question over the whole
    corpus (1: the search's answer), with their mean there; ``survived`` for a survivor not among the
    ``confirm`` best (its mean over the race's corpus samples); ``eliminated`` with the round (1 for the
    first), the questions it was tested on, who beat it and by how much, and the corrected p-value;
    ``unfinished`` when the budget ran out while it raced (its mean so far)."""

    key: CandidateKey
    status: FateStatus
    mean: float
    n_questions: int
    round: int | None = None
    tier: int | None = None
    beaten_by: CandidateKey | None = None
    best_mean: float | None = None
    p_value: float | None = None

    def describe(self) -> str:
        if self.status == "tier":
            return f"tier {self.tier}: {self.mean:.3f} on {self.n_questions} questions, whole corpus"
        if self.status == "survived":
            return (
                f"survived the race: {self.mean:.3f} on {self.n_questions} questions over the corpus "
                "samples; not among the best scored on the whole corpus (racing.confirm)"
            )
        if self.status == "unfinished":
            return f"unfinished: {self.mean:.3f} on {self.n_questions} questions when the budget ran out"
        return (
            f"eliminated in round {self.round} on {self.n_questions} questions by {self.beaten_by}: "
            f"{self.mean:.3f} vs {self.best_mean:.3f}, corrected p {self.p_value:.4f}"
        )


@dataclass(frozen=True)
class RoundReport:
    """What one round decided: who raced, who it eliminated, and the standings (key -> mean)."""

    round: Round
    racing: tuple[CandidateKey, ...]
    eliminated: tuple[Fate, ...]
    means: Mapping[CandidateKey, float]


@dataclass
class RaceOutcome:
    status: RaceStatus
    fates: dict[CandidateKey, Fate]
    rounds: list[RoundReport]
    spend: Spend
    # the confirmed survivors' scores on every question over the whole corpus
    final_scores: dict[CandidateKey, pd.DataFrame] = field(default_factory=dict)
    stopped_because: str = ""
    # every survivor's scores in the race: the same questions over the same corpus samples, so they
    # compare fairly (the Pareto front of cost, outcome.py)
    race_scores: dict[CandidateKey, pd.DataFrame] = field(default_factory=dict)

    @property
    def winners(self) -> list[CandidateKey]:
        """Tier 1 of the survivors confirmed on the whole corpus: the search's answer, best first."""
        return sorted(
            (f.key for f in self.fates.values() if f.status == "tier" and f.tier == 1),
            key=lambda k: (-self.fates[k].mean, k),
        )

    @property
    def winning_tier(self) -> list[CandidateKey]:
        """The setups no test told apart from the best: the race's survivors, less any the confirmation
        on the whole corpus told apart from the winner; the confirmed first (best first), then the
        others by their mean in the race."""
        tier = [
            f for f in self.fates.values() if (f.status == "tier" and f.tier == 1) or f.status == "survived"
        ]
        return [f.key for f in sorted(tier, key=lambda f: (f.status != "tier", -f.mean, f.key))]


def race(
    candidates: Sequence[Candidate],
    rounds: Sequence[Round],
    scorer: Scorer,
    store: ResultStore,
    *,
    alpha: float,
    confirm: int | None = None,
    questions: Sequence[QuestionId] | None = None,
    tier_alpha: float | None = None,
    budget: SearchBudget = NO_LIMIT,
    on_round: Callable[[RoundReport], None] = lambda report: None,
    clock: Callable[[], float] = time.monotonic,
) -> RaceOutcome:
    """Race ``candidates`` over ``rounds`` (see the module docstring): eliminations at ``alpha`` (split
    over the rounds); the ``confirm`` best survivors (all when None) scored on the whole corpus and
    ranked into tiers at ``tier_alpha`` (the leaderboard's; ``alpha`` when None)."""
    started = clock()
    store = _ReadOnce(store)
    before = store.load_spend()

    def spent_so_far() -> Spend:
        """What every run of this search paid: the runs before this one, and this one."""
        return Spend(
            before.texts_embedded + scorer.spend.texts_embedded,
            0,
            0,
            before.llm_usd + scorer.spend.llm_usd,
            before.seconds + clock() - started,
        )

    alive = sorted(candidates, key=lambda c: c.key)
    fates: dict[CandidateKey, Fate] = {}
    reports: list[RoundReport] = []
    look_alpha = alpha / len(rounds)
    spent = ""
    for round in rounds:
        spent = _score_all(
            alive, round, round.new_questions, round.index, scorer, store, budget, spent_so_far
        )
        if spent:
            break
        values = {c.key: _values(store, c.key, rounds[: round.index + 1]) for c in alive}
        means = {key: float(v.mean()) for key, v in values.items()}
        ranked = sorted(alive, key=lambda c: (-means[c.key], c.key))
        best, challengers = ranked[0], ranked[1:]
        eliminated = []
        if challengers:
            table = pd.DataFrame({c.key: values[c.key] for c in ranked})
            tests = compare_with_best(table, best.key, [c.key for c in challengers])
            for challenger, (p, n) in zip(challengers, tests, strict=True):
                if p <= look_alpha and means[challenger.key] < means[best.key]:
                    fate = Fate(
                        challenger.key,
                        "eliminated",
                        means[challenger.key],
                        n,
                        round=round.number,
                        beaten_by=best.key,
                        best_mean=means[best.key],
                        p_value=p,
                    )
                    fates[challenger.key] = fate
                    eliminated.append(fate)
        report = RoundReport(round, tuple(c.key for c in ranked), tuple(eliminated), means)
        reports.append(report)
        alive = [c for c in alive if c.key not in fates]
        on_round(report)
        if len(alive) == 1:
            break
    if spent:
        spend = _spend(spent_so_far(), scorer, store, candidates, rounds)
        store.save_spend(spend)
        return _unfinished(alive, rounds, store, fates, reports, spend, spent)
    # the best survivors on every question over the whole corpus: what no round scored there yet (the
    # rounds that indexed a sample of it, and those a race left with one candidate never ran)
    ran = [report.round for report in reports]
    raced = {c.key: _race_scores(store, c.key, ran) for c in alive}
    values = {c.key: _values(store, c.key, ran) for c in alive}
    standing = sorted(alive, key=lambda c: (-float(values[c.key].mean()), c.key))
    alive = standing[: len(standing) if confirm is None else confirm]
    for candidate in standing[len(alive) :]:
        series = values[candidate.key]
        fates[candidate.key] = Fate(candidate.key, "survived", float(series.mean()), len(series))
    on_whole = {q for r in ran if r.full_corpus for q in r.new_questions}
    everything = tuple(rounds[-1].questions if questions is None else questions)
    missing = tuple(q for q in everything if q not in on_whole)
    confirmation = Round(len(rounds), everything, missing, None)
    spent = _score_all(alive, confirmation, missing, FINAL, scorer, store, budget, spent_so_far)
    spend = _spend(spent_so_far(), scorer, store, candidates, rounds)
    store.save_spend(spend)
    if spent:
        return _unfinished(alive, rounds, store, fates, reports, spend, spent)
    final = {c.key: _final_scores(store, c.key, ran) for c in alive}
    ranked = sorted(alive, key=lambda c: (-float(final[c.key][VALUE].mean()), c.key))
    verdicts = statistical_tiers(
        [final[c.key].set_index("question_id")[VALUE] for c in ranked],
        alpha if tier_alpha is None else tier_alpha,
    )
    for candidate, verdict in zip(ranked, verdicts, strict=True):
        scores = final[candidate.key]
        fates[candidate.key] = Fate(
            candidate.key,
            "tier",
            float(scores[VALUE].mean()),
            len(scores),
            tier=verdict.tier,
            p_value=None if math.isnan(verdict.p_value) else verdict.p_value,
        )
    return RaceOutcome("finished", fates, reports, spend, final, race_scores=raced)


class _ReadOnce:
    """The store, each unit read from it once per race: a written unit never changes, and the race asks
    for the same units every round (is it scored, its values, the spend)."""

    def __init__(self, store: ResultStore) -> None:
        self.store = store
        self.read: dict[tuple[CandidateKey, Unit], pd.DataFrame | None] = {}

    def load(self, key: CandidateKey, unit: Unit) -> pd.DataFrame | None:
        if (key, unit) not in self.read:
            self.read[(key, unit)] = self.store.load(key, unit)
        return self.read[(key, unit)]

    def save(self, key: CandidateKey, unit: Unit, frame: pd.DataFrame) -> None:
        self.store.save(key, unit, frame)
        self.read[(key, unit)] = frame

    def load_spend(self) -> Spend:
        return self.store.load_spend()

    def save_spend(self, spend: Spend) -> None:
        self.store.save_spend(spend)


def _score_all(
    alive: Sequence[Candidate],
    round: Round,
    questions: Sequence[QuestionId],
    unit: Unit,
    scorer: Scorer,
    store: ResultStore,
    budget: SearchBudget,
    spent_so_far: Callable[[], Spend],
) -> str:
    """Score ``questions`` over ``round``'s corpus for every candidate in ``alive`` without a stored
    ``unit``, a chunk config at a time, saving the scores and the spend after each. Returns why the
    budget stopped it ("" when it did not)."""
    groups: dict[str, list[Candidate]] = {}
    for candidate in alive:
        groups.setdefault(candidate.chunk_config.name, []).append(candidate)
    for group in groups.values():
        scorer.note_indexed(group, round)
        missing = [c for c in group if store.load(c.key, unit) is None]
        if not missing:
            continue
        if not questions:  # nothing left to score: an empty unit, so a resumed race knows it is done
            for candidate in missing:
                store.save(candidate.key, unit, pd.DataFrame({c: [] for c in SCORE_COLUMNS}))
            continue
        spent = _spent(spent_so_far(), budget)
        if spent:
            return spent
        scores = scorer.score(missing, round, questions)
        for candidate in missing:
            store.save(candidate.key, unit, scores[candidate.profile.name])
        store.save_spend(spent_so_far())
    return ""


def _spend(
    so_far: Spend,
    scorer: Scorer,
    store: ResultStore,
    candidates: Sequence[Candidate],
    rounds: Sequence[Round],
) -> Spend:
    """What the search paid over all its runs: the embedding, LLM and time counts kept by the store,
    the texts indexed as the scorer noted them and the queries as the stored scores count them (both the
    same for a resumed search as for one that ran through)."""
    units: list[Unit] = [*(r.index for r in rounds), FINAL]
    counts = {
        unit: sum(len(f) for c in candidates if (f := store.load(c.key, unit)) is not None) for unit in units
    }
    return Spend(
        so_far.texts_embedded,
        scorer.texts_indexed(),
        sum(counts.values()),
        so_far.llm_usd,
        so_far.seconds,
        counts[FINAL],
    )


def _spent(spend: Spend, budget: SearchBudget) -> str:
    """Which budget is spent ("" when none is)."""
    if budget.wall_seconds is not None and spend.seconds >= budget.wall_seconds:
        return f"wall time {spend.seconds:,.0f} s >= budget.wall_seconds {budget.wall_seconds:,.0f}"
    if budget.embedded_texts is not None and spend.texts_embedded >= budget.embedded_texts:
        return f"{spend.texts_embedded:,} texts embedded >= budget.embedded_texts {budget.embedded_texts:,}"
    if budget.llm_usd is not None and spend.llm_usd >= budget.llm_usd:
        return f"${spend.llm_usd:.4f} of LLM calls >= budget.llm_usd ${budget.llm_usd:.4f}"
    return ""


def _values(store: ResultStore, key: CandidateKey, rounds: Sequence[Round]) -> pd.Series:
    """The candidate's objective per question over ``rounds`` (indexed by question id)."""
    return _race_scores(store, key, rounds).set_index("question_id")[VALUE].astype("float64")


def _race_scores(store: ResultStore, key: CandidateKey, rounds: Sequence[Round]) -> pd.DataFrame:
    """The candidate's scores in ``rounds``, one row per question."""
    frames = [store.load(key, r.index) for r in rounds]
    return pd.concat([f for f in frames if f is not None and len(f)], ignore_index=True)


def _final_scores(store: ResultStore, key: CandidateKey, rounds: Sequence[Round]) -> pd.DataFrame:
    """Every question's scores over the whole corpus: the rounds that indexed all of it, and the
    confirmation for the others."""
    frames = [store.load(key, r.index) for r in rounds if r.full_corpus]
    frames.append(store.load(key, FINAL))
    found = pd.concat([f for f in frames if f is not None and len(f)], ignore_index=True)
    return found.drop_duplicates("question_id", keep="last").sort_values("question_id", kind="stable")


def _unfinished(
    alive: Sequence[Candidate],
    rounds: Sequence[Round],
    store: ResultStore,
    fates: dict[CandidateKey, Fate],
    reports: list[RoundReport],
    spend: Spend,
    why: str,
) -> RaceOutcome:
    for candidate in alive:
        frames = [store.load(candidate.key, r.index) for r in rounds]
        scored = [f for f in frames if f is not None and len(f)]
        values = pd.concat(scored)[VALUE] if scored else pd.Series(dtype="float64")
        fates[candidate.key] = Fate(
            candidate.key,
            "unfinished",
            float(values.mean()) if len(values) else math.nan,
            len(values),
        )
    return RaceOutcome("budget spent", fates, reports, spend, {}, why)
