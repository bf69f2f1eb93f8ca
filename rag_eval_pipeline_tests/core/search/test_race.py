"""Racing with scripted scores: a planted winner is found and the rest eliminated; equal candidates are
never eliminated; only the best survivors are confirmed on the whole corpus; a killed race resumes
without scoring anything twice; the budget stops it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.search.candidates import Candidate, CandidateKey
from rag_eval_pipeline.core.search.fidelity import Block, Round, sample_sizes
from rag_eval_pipeline.core.search.outcome import GridCost, SearchOutcome, format_outcome
from rag_eval_pipeline.core.search.race import (
    CONTEXT_TOKENS,
    FULL_CORPUS,
    LATENCY_MS,
    VALUE,
    Spend,
    Unit,
    race,
)
from rag_eval_pipeline.core.search.settings import SearchBudget
from rag_eval_pipeline.core.settings.configs import ChunkConfig, RetrievalProfile
from rag_eval_pipeline.core.types import ChunkConfigName, DocumentId, ProfileName, QuestionId

QUESTIONS = [QuestionId(f"q{i:03d}") for i in range(120)]


def candidate(config: str, profile: str) -> Candidate:
    return Candidate(
        ChunkConfig(ChunkConfigName(config), "fixed", 100), RetrievalProfile(ProfileName(profile), top_k=3)
    )


def plan(sampled: bool = False) -> list[Round]:
    """Rounds over QUESTIONS in order: 10, 20, 40, 80, 120; with ``sampled`` the first ones index a part
    of the corpus (the scorer only sees the flag)."""
    found, done = [], 0
    part = frozenset({Block(DocumentId("d"), 0, 10)})
    for index, size in enumerate(sample_sizes(len(QUESTIONS), 10, 2)):
        full = not sampled or size == len(QUESTIONS)
        found.append(
            Round(index, tuple(QUESTIONS[:size]), tuple(QUESTIONS[done:size]), None if full else part)
        )
        done = size
    return found


class ScriptedScorer:
    """Each candidate's per-question objective from a table; records every (candidate, question,
    full corpus) it scored, and can fail after a number of calls (a killed process)."""

    def __init__(self, values: Mapping[str, Sequence[float]], fail_after: int | None = None) -> None:
        self.values = {k: dict(zip(QUESTIONS, v, strict=True)) for k, v in values.items()}
        self.scored: list[tuple[str, QuestionId, bool]] = []
        self.calls = 0
        self.fail_after = fail_after
        self.spend = Spend()
        self.indexed: set[tuple[str, int]] = set()  # (chunk config, round): its 10 texts each

    def note_indexed(self, candidates: Sequence[Candidate], round: Round) -> None:
        self.indexed.add((candidates[0].chunk_config.name, round.index))

    def texts_indexed(self) -> int:
        return 10 * len(self.indexed)

    def score(
        self, candidates: Sequence[Candidate], round: Round, questions: Sequence[QuestionId]
    ) -> dict[ProfileName, pd.DataFrame]:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt("killed")
        self.calls += 1
        self.spend.texts_embedded += 10
        out = {}
        for c in candidates:
            self.spend.queries += len(questions)
            self.scored += [(c.key, q, round.full_corpus) for q in questions]
            out[c.profile.name] = pd.DataFrame(
                {
                    "question_id": list(questions),
                    VALUE: [self.values[c.key][q] for q in questions],
                    CONTEXT_TOKENS: 100.0,
                    LATENCY_MS: 1.0,
                    FULL_CORPUS: round.full_corpus,
                }
            )
        return out


class MemoryStore:
    def __init__(self) -> None:
        self.frames: dict[tuple[str, Unit], pd.DataFrame] = {}
        self.spend = Spend()

    def load_spend(self) -> Spend:
        return self.spend

    def save_spend(self, spend: Spend) -> None:
        self.spend = spend

    def load(self, key: CandidateKey, unit: Unit) -> pd.DataFrame | None:
        return self.frames.get((key, unit))

    def save(self, key: CandidateKey, unit: Unit, frame: pd.DataFrame) -> None:
        self.frames[(key, unit)] = frame


def noisy(mean: float, seed: int) -> list[float]:
    """Per-question recall-like values around ``mean`` (0 or 1 with that chance)."""
    return (np.random.default_rng(seed).random(len(QUESTIONS)) < mean).astype(float).tolist()


PLANTED = {
    "good--p": noisy(0.9, 1),
    "bad--p": noisy(0.3, 2),
    "worse--p": noisy(0.1, 3),
    "mid--p": noisy(0.55, 4),
}


def candidates_of(values: Mapping[str, object]) -> list[Candidate]:
    return [candidate(*key.split("--")) for key in values]


def test_a_planted_winner_is_found_and_the_rest_eliminated_early() -> None:
    scorer = ScriptedScorer(PLANTED)
    outcome = race(candidates_of(PLANTED), plan(), scorer, MemoryStore(), alpha=0.05)
    assert outcome.status == "finished" and outcome.winners == ["good--p"]
    fates = outcome.fates
    assert all(
        fates[k].status == "eliminated" and fates[k].beaten_by == "good--p" for k in PLANTED if k != "good--p"
    )
    # clearly worse: eliminated in round 1 or 2
    assert fates["worse--p"].round is not None and fates["worse--p"].round <= 2
    # rounds count from 1: a fate's round is the one whose questions it was tested on
    assert all(
        f.n_questions == len(outcome.rounds[f.round - 1].round.questions)
        for f in fates.values()
        if f.status == "eliminated" and f.round is not None
    )
    assert all(
        f.p_value is not None and f.p_value <= 0.05 / 5 for f in fates.values() if f.status == "eliminated"
    )
    # the losers were not asked every question: that is the point
    asked = {k: sum(1 for key, _, _ in scorer.scored if key == k) for k in PLANTED}
    assert asked["good--p"] == len(QUESTIONS) and asked["worse--p"] < len(QUESTIONS) / 2
    assert outcome.spend.queries == sum(asked.values()) < len(PLANTED) * len(QUESTIONS)
    assert next(r.round.index for r in outcome.rounds) == 0 and outcome.rounds[0].racing[0] == "good--p"


def test_equal_candidates_are_never_eliminated() -> None:
    same = noisy(0.6, 9)
    values = {"a--p": same, "b--p": list(same), "c--p": noisy(0.6, 10)}  # c: the same mean, other noise
    outcome = race(candidates_of(values), plan(), ScriptedScorer(values), MemoryStore(), alpha=0.05)
    assert {f.status for f in outcome.fates.values()} == {"tier"}
    assert sorted(outcome.winners) == ["a--p", "b--p", "c--p"]


def test_the_survivors_are_confirmed_over_the_whole_corpus() -> None:
    scorer = ScriptedScorer(PLANTED)
    outcome = race(candidates_of(PLANTED), plan(sampled=True), scorer, MemoryStore(), alpha=0.05)
    on_sample = {q for key, q, full in scorer.scored if key == "good--p" and not full}
    on_whole = {q for key, q, full in scorer.scored if key == "good--p" and full}
    ran = [r.round for r in outcome.rounds]  # the race ends once good--p is left alone
    assert on_sample == {q for r in ran for q in r.new_questions} and len(ran) < 5
    assert on_whole == set(QUESTIONS)  # again over the whole corpus, and the questions never reached
    final = outcome.final_scores["good--p"]
    assert sorted(final["question_id"]) == QUESTIONS and final[FULL_CORPUS].all()
    assert outcome.fates["good--p"].n_questions == len(QUESTIONS)


def test_a_killed_race_resumes_and_pays_for_nothing_twice() -> None:
    store = MemoryStore()
    killed = ScriptedScorer(PLANTED, fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        race(candidates_of(PLANTED), plan(), killed, store, alpha=0.05)
    assert killed.calls == 3 and store.frames  # what was scored before the kill is stored
    resumed = ScriptedScorer(PLANTED)
    outcome = race(candidates_of(PLANTED), plan(), resumed, store, alpha=0.05)
    again = set(killed.scored) & set(resumed.scored)
    assert again == set()  # nothing scored twice
    uninterrupted = ScriptedScorer(PLANTED)
    expected = race(candidates_of(PLANTED), plan(), uninterrupted, MemoryStore(), alpha=0.05)
    assert outcome.fates == expected.fates  # the same path, the same decisions
    assert sorted(killed.scored + resumed.scored) == sorted(uninterrupted.scored)
    # what the search paid, over both runs, is what one run through pays
    assert outcome.spend.queries == expected.spend.queries == len(uninterrupted.scored)
    assert outcome.spend.texts_embedded == expected.spend.texts_embedded == 10 * uninterrupted.calls
    assert outcome.spend.texts_indexed == expected.spend.texts_indexed


def test_the_budget_stops_the_race_and_says_where_it_stood() -> None:
    scorer = ScriptedScorer(PLANTED)
    outcome = race(
        candidates_of(PLANTED),
        plan(),
        scorer,
        MemoryStore(),
        alpha=0.05,
        budget=SearchBudget(embedded_texts=15),
    )
    assert outcome.status == "budget spent" and "budget.embedded_texts 15" in outcome.stopped_because
    assert scorer.calls == 2  # stopped before the third call (each embeds 10 texts)
    assert {f.status for f in outcome.fates.values()} <= {"unfinished", "eliminated"}
    assert outcome.winners == []


def one_better(values: list[float]) -> list[float]:
    """``values`` with the first miss answered: the better mean, by a difference no test can show."""
    first = values.index(0.0)
    return [1.0 if i == first else v for i, v in enumerate(values)]


def test_only_the_best_survivors_are_confirmed_and_the_rest_survive() -> None:
    """confirm=1: of three candidates no test tells apart, the best in the race is scored again on every
    question over the whole corpus (the questions the race never reached too); the others keep their
    race scores and are the rest of the winning tier."""
    same = noisy(0.6, 9)
    values = {"a--p": same, "b--p": list(same), "c--p": one_better(same)}
    scorer = ScriptedScorer(values)
    raced = plan(sampled=True)[:3]  # the race asks 40 questions at most (racing.max_sample)
    outcome = race(
        candidates_of(values), raced, scorer, MemoryStore(), alpha=0.05, confirm=1, questions=QUESTIONS
    )
    fates = outcome.fates
    assert outcome.winners == ["c--p"] and fates["c--p"].status == "tier" and fates["c--p"].tier == 1
    assert fates["c--p"].n_questions == len(QUESTIONS)
    assert {q for k, q, full in scorer.scored if k == "c--p" and full} == set(QUESTIONS)
    for key in ("a--p", "b--p"):
        assert fates[key].status == "survived" and fates[key].n_questions == 40
        assert not [q for k, q, full in scorer.scored if k == key and full]  # never on the whole corpus
        assert "not among the best scored on the whole corpus" in fates[key].describe()
    assert outcome.winning_tier == ["c--p", "a--p", "b--p"]  # the confirmed first
    assert set(outcome.final_scores) == {"c--p"}
    assert {k: len(f) for k, f in outcome.race_scores.items()} == {k: 40 for k in values}
    assert outcome.spend.queries == 3 * 40 + len(QUESTIONS)  # the race, then one confirmation


def test_the_front_is_drawn_among_the_survivors_on_the_race_questions() -> None:
    """The Pareto front of the winning tier compares the survivors where all of them were scored: the
    race's questions and corpus samples (a confirmed survivor's whole-corpus scores are not mixed in)."""
    same = noisy(0.6, 9)
    values = {"cheap--p": same, "dear--p": one_better(same), "mid--p": list(same)}
    scorer = ScriptedScorer(values)
    tokens = {"cheap--p": 50.0, "dear--p": 400.0, "mid--p": 200.0}
    score = scorer.score

    def priced(candidates: Sequence[Candidate], round: Round, questions: Sequence[QuestionId]):  # type: ignore[no-untyped-def]
        frames = score(candidates, round, questions)
        for c in candidates:
            frames[c.profile.name][CONTEXT_TOKENS] = tokens[c.key]
        return frames

    scorer.score = priced  # type: ignore[method-assign]
    found = race(candidates_of(values), plan(sampled=True)[:3], scorer, MemoryStore(), alpha=0.05, confirm=1)
    outcome = SearchOutcome(
        "s", "recall", len(QUESTIONS), tuple(candidates_of(values)), found, GridCost(1, 1)
    )
    # mid--p: the same recall as cheap--p for more tokens, off the front
    assert outcome.front() == ["cheap--p", "dear--p"]
    frame = outcome.candidates_frame().set_index("candidate")
    assert frame.loc["cheap--p", "fate"] == "survived" and frame.loc["cheap--p", "pareto_front"]
    assert frame.loc["cheap--p", "context_tokens_mean"] == 50.0


def test_the_outcome_keeps_the_two_bases_apart_and_counts_the_confirmation() -> None:
    """Two equal candidates survive a race over corpus samples; the best is confirmed on the whole
    corpus. Its whole-corpus score and the survivor's race score are in separate columns; the compute
    says the search asked more than the grid, and why."""
    same = noisy(0.6, 9)
    values = {"a--p": same, "b--p": list(same)}
    found = race(
        candidates_of(values),
        plan(sampled=True),
        ScriptedScorer(values),
        MemoryStore(),
        alpha=0.05,
        confirm=1,
    )
    grid = GridCost(texts=1000, queries=len(values) * len(QUESTIONS))
    outcome = SearchOutcome("s", "recall", len(QUESTIONS), tuple(candidates_of(values)), found, grid)
    # the race asked both every question (the last round over the whole corpus); the confirmation asked the
    # winner again the 80 it had answered over samples
    assert (found.spend.queries, found.spend.confirmation_queries) == (2 * 120 + 80, 80)
    text = format_outcome(outcome)
    assert (
        "  queries: 320 (240 in the race, 80 confirming on the whole corpus), 80 more than the grid's 240 (+33%): the confirmation asked again"
        in text
    )
    indexed = found.spend.texts_indexed
    assert f"  chunk texts indexed: {indexed} of the grid's 1,000 ({1 - indexed / 1000:.0%} saved)" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("candidate"))
    assert header.split() == [
        "candidate",
        "whole",
        "corpus",
        "questions",
        "race",
        "sample",
        "questions",
        "fate",
    ]
    rows = {line.split()[0]: line.split() for line in lines[lines.index(header) + 2 :]}
    winner, survivor = found.winners[0], next(k for k in values if k not in found.winners)
    assert rows[winner][1:5] == [f"{found.fates[winner].mean:.3f}", "120", f"{np.mean(same):.3f}", "120"]
    assert rows[survivor][1:3] == [f"{np.mean(same):.3f}", "120"]  # no whole-corpus score: not confirmed
    assert rows[survivor][3] == "survived"
