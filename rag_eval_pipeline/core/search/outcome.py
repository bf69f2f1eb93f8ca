"""What a search found, in the words a reader needs: the winning tier (the setups no test told apart from
the best in the race) and its winner confirmed on the whole corpus, the Pareto front of quality against
context among the tier, every candidate's fate (when and against whom it was eliminated, with the
numbers), and the compute against the full grid's (texts embedded, queries run: the confirmation on the
whole corpus can make a search ask more than the grid would).

The full grid's cost is counted, not run: every distinct chunk text of every candidate's chunk config
indexed once (embeddings shared through the cache, as `rag-eval run` shares them), and every candidate
asked every question.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ..evaluation.costs import CONTEXT_TOKENS_MEAN, LATENCY_P95, latency_percentiles
from ..leaderboard.pareto import pareto_front
from ..metrics.names import CONTEXT_TOKENS
from ..text_table import format_table
from .candidates import Candidate, CandidateKey
from .race import VALUE, Fate, RaceOutcome


@dataclass(frozen=True)
class GridCost:
    """What grading every candidate on every question over the whole corpus costs."""

    texts: int  # distinct chunk texts to embed (dense candidates' chunk configs)
    queries: int  # candidates x questions


@dataclass(frozen=True)
class SearchOutcome:
    search_id: str
    objective: str
    n_questions: int
    candidates: tuple[Candidate, ...]
    race: RaceOutcome
    grid: GridCost
    resumed_units: int = 0  # stored scores a resumed search found (paid for before)

    @property
    def winners(self) -> list[CandidateKey]:
        return self.race.winners

    @property
    def winning_tier(self) -> list[CandidateKey]:
        return self.race.winning_tier

    def front(self) -> list[CandidateKey]:
        """The winning tier's setups that no other of them beats on both the objective and context
        tokens, cheapest first: on the race's questions and corpus samples, which all of them answered."""
        scores = self.race.race_scores
        scored = [k for k in self.winning_tier if k in scores and len(scores[k])]
        points = [(float(scores[k][VALUE].mean()), -float(scores[k][CONTEXT_TOKENS].mean())) for k in scored]
        on = [scored[i] for i in pareto_front(points)]
        return sorted(on, key=lambda k: (float(scores[k][CONTEXT_TOKENS].mean()), k))

    def saved(self) -> tuple[float, float]:
        """The share of the full grid's texts embedded and queries run that the search did not pay."""
        spend = self.race.spend
        texts = 1 - spend.texts_indexed / self.grid.texts if self.grid.texts else 0.0
        queries = 1 - spend.queries / self.grid.queries if self.grid.queries else 0.0
        return texts, queries

    def candidates_frame(self) -> pd.DataFrame:
        """One row per candidate: what it is, its fate and its numbers (the ``search_candidates`` table)."""
        rows = []
        front = set(self.front())
        for candidate in self.candidates:
            fate = self.race.fates.get(candidate.key)
            # its costs where it was scored last: the whole corpus (confirmed) or the race (a survivor)
            final = self.race.final_scores.get(candidate.key, self.race.race_scores.get(candidate.key))
            c, p = candidate.chunk_config, candidate.profile
            rows.append(
                {
                    "search_id": self.search_id,
                    "candidate": candidate.key,
                    "chunk_config": c.name,
                    "chunker": c.chunker,
                    "chunk_size": c.chunk_size,
                    "chunk_overlap": c.chunk_overlap,
                    "tokenizer": c.tokenizer if c.counts_tokens else "",
                    "profile": p.name,
                    "top_k": p.top_k,
                    "vector_weight": p.vector_weight,
                    "keyword_weight": p.keyword_weight,
                    "rrf_k": p.rrf_k,
                    "similarity_threshold": p.similarity_threshold,
                    "reranker": p.reranker or "",
                    "query_rewrite": p.query_rewrite_enabled,
                    "objective": self.objective,
                    "fate": fate.status if fate else "not raced",
                    "tier": fate.tier if fate else None,
                    "mean": fate.mean if fate else float("nan"),
                    "n_questions": fate.n_questions if fate else 0,
                    "eliminated_in_round": fate.round if fate else None,
                    "beaten_by": (fate.beaten_by or "") if fate else "",
                    "best_mean": fate.best_mean if fate else None,
                    "p_value": fate.p_value if fate else None,
                    CONTEXT_TOKENS_MEAN: float(final[CONTEXT_TOKENS].mean()) if final is not None else None,
                    "latency_p95_ms": latency_percentiles(final)[LATENCY_P95] if final is not None else None,
                    "pareto_front": candidate.key in front,
                    "fate_text": fate.describe() if fate else "",
                }
            )
        frame = pd.DataFrame(rows)
        for column in ("tier", "eliminated_in_round"):
            frame[column] = frame[column].astype("Int64")
        return frame


def format_outcome(outcome: SearchOutcome) -> str:
    """The search's answer for the terminal: the winning tier, the front, the compute against the full
    grid's, then every candidate's scores on each basis and its fate (the winners first, then by how long
    each raced)."""
    race = outcome.race
    lines = [
        f"search {outcome.search_id}: {len(outcome.candidates)} candidates, {outcome.objective}, "
        f"{outcome.n_questions} questions"
    ]
    if race.status == "budget spent":
        lines.append(f"stopped: the budget is spent ({race.stopped_because}); the standings so far:")
    winners = outcome.winners
    if winners:
        tier = outcome.winning_tier
        raced = [race.fates[k].n_questions for k in tier if race.fates[k].status == "survived"]
        lines.append(
            f"winning tier: {len(tier)} setup{'s' if len(tier) != 1 else ''} no test told apart from the "
            f"best on {outcome.objective}"
            + (f" (the race's {raced[0]} questions)" if raced else "")
            + ": "
            + ", ".join(tier)
        )
        names = ", ".join(f"{k} ({race.fates[k].mean:.3f})" for k in winners)
        lines.append(f"confirmed on every question over the whole corpus: {names}")
    front = outcome.front()
    if front:
        scores = race.race_scores
        lines.append(
            "Pareto front of the tier (quality against context tokens in the race, cheapest first): "
            + ", ".join(
                f"{k} ({scores[k][CONTEXT_TOKENS].mean():,.0f} tokens, {scores[k][VALUE].mean():.3f})"
                for k in front
            )
        )
    lines += compute_lines(outcome)
    lines.append("")
    order = sorted(
        race.fates.values(),
        key=lambda f: (
            {"tier": 0, "survived": 1, "unfinished": 2, "eliminated": 3}[f.status],
            f.tier or 0,
            -(f.round if f.round is not None else 99),
            -f.mean,
            f.key,
        ),
    )
    lines.append(
        f"{outcome.objective}: 'whole corpus' on every question over the whole corpus (the confirmed); 'race "
        "sample' on the race's questions over its corpus samples, where each raced last (fewer distractors: "
        "scores run higher there, so the two columns do not compare)"
    )
    rows = [[f.key, *score_cells(outcome, f), f.describe()] for f in order]
    lines.append(
        format_table(["candidate", "whole corpus", "questions", "race sample", "questions", "fate"], rows)
    )
    return "\n".join(lines)


def score_cells(outcome: SearchOutcome, fate: Fate) -> list[str]:
    """A candidate's objective and questions on the whole corpus and in the race ("" where it was not
    scored on that basis)."""
    whole = [f"{fate.mean:.3f}", str(fate.n_questions)] if fate.status == "tier" else ["", ""]
    if fate.status != "tier":
        raced = [mean_text(fate.mean), str(fate.n_questions)]
    elif fate.key in outcome.race.race_scores and len(outcome.race.race_scores[fate.key]):
        scores = outcome.race.race_scores[fate.key][VALUE]
        raced = [f"{scores.mean():.3f}", str(len(scores))]
    else:
        raced = ["", ""]
    return [*whole, *raced]


def mean_text(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def compute_lines(outcome: SearchOutcome) -> list[str]:
    """What the search paid against what the full grid would have (every candidate asked every question
    over the whole corpus), saying where the search paid more and why."""
    spend, grid = outcome.race.spend, outcome.grid
    confirmed = spend.confirmation_queries
    queries = f"queries: {spend.queries:,}"
    if confirmed:
        queries += (
            f" ({spend.queries - confirmed:,} in the race, {confirmed:,} confirming on the whole corpus)"
        )
    queries += against(spend.queries, grid.queries)
    if spend.queries > grid.queries and confirmed:
        queries += (
            ": the confirmation asked again, over the whole corpus, questions the race had asked over "
            "corpus samples, and the race eliminated too few candidates early to pay for that"
        )
    return [
        "compute, the search against the full grid (every candidate on every question over the whole "
        f"corpus: {grid.queries:,} queries, {grid.texts:,} chunk texts):",
        f"  chunk texts indexed: {spend.texts_indexed:,}{against(spend.texts_indexed, grid.texts)}; "
        f"{spend.texts_embedded:,} texts sent to the embedding model, the rest from the cache",
        f"  {queries}",
        f"  LLM calls: ${spend.llm_usd:.4f}; time: {spend.seconds:,.0f} s"
        + (f"; resumed: {outcome.resumed_units} stored scores reused" if outcome.resumed_units else ""),
    ]


def against(spent: int, grid: int) -> str:
    """``spent`` against the full grid's ``grid``: the share saved, or how much more."""
    if not grid:
        return ""
    if spent <= grid:
        return f" of the grid's {grid:,} ({1 - spent / grid:.0%} saved)"
    return f", {spent - grid:,} more than the grid's {grid:,} (+{spent / grid - 1:.0%})"


def grid_cost(texts_by_config: Sequence[set[str]], n_candidates: int, n_questions: int) -> GridCost:
    """The full grid's cost from each dense chunk config's distinct chunk texts (sha256)."""
    return GridCost(len(set().union(*texts_by_config)) if texts_by_config else 0, n_candidates * n_questions)
