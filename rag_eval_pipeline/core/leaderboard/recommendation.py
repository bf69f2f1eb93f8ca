"""Which setup to pick, said at the top of every view of the leaderboard: the best ranked setup by the
objective, the setups the questions cannot tell apart from it (tier 1), how far the questions can tell
setups apart (power), what a cheaper tied setup would cost in score, and what kind of questions it was
measured on.

Built from the ranked board alone (its ``ranked_by``, ``tier*``, ``power_*``, cost (core/evaluation/costs.py) and
``question_generators`` columns, ranking.py, tiers.py, power.py and pareto.py), so `rag-eval leaderboard` says the same as the
asset that built the board. Every view shows it: ``render_text.format_recommendation`` (the terminal),
``render_markdown.recommendation_markdown`` (the asset's metadata) and ``recommendation_html`` here (a
section of the HTML report).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from html import escape

import pandas as pd

from ..evaluation.costs import (
    CONTEXT_TOKENS_MEAN,
    COST_BASIS,
    INDEX_BYTES,
    INDEX_USD,
    LATENCY_P50,
    LATENCY_P95,
    USD_PER_1K,
)
from ..generation.sources import known_item_share
from .labels import cost_text
from .pareto import front_rows
from .power import POWER
from .view import (
    EXCLUDED_LABEL,
    NOT_COMPARABLE_MARK,
    REMOVED_LABEL,
    first_ranked,
    is_ranked,
    rank_label,
    ranked_by,
)

_BUDGET_COLUMN = re.compile(r"^(?P<metric>.+)_(?P<budget>\d+)t$")
KNOWN_ITEM_WARNING = (
    "known-item questions (bags of a passage's salient terms) favour keyword (BM25) retrieval: confirm a "
    "choice between dense and keyword profiles on LLM-generated or real questions"
)


@dataclass(frozen=True)
class Recommendation:
    """``headline`` (the setup to pick, or why there is none) and labelled ``details``."""

    headline: str
    details: tuple[tuple[str, str], ...]


def recommend(board: pd.DataFrame) -> Recommendation:
    """The recommendation a ranked board supports."""
    metric = ranked_by(board)
    if "ranked_by" not in board.columns:
        best = first_ranked(board)
        name = pair(best) if best is not None else "none ranked"
        return Recommendation(
            f"Best by span IoU: {name} (a leaderboard built before the objective and its tiers: "
            "`rag-eval run` builds it again)",
            (),
        )
    best = first_ranked(board)
    objective = ("ranked by", objective_line(board, metric))
    unranked = unranked_line(board)
    if best is None:
        details = (objective, unranked) if unranked[1] else (objective,)
        return Recommendation("No recommendation: no setup is ranked", details)
    ranked = [row for _, row in board.iterrows() if is_ranked(row)]
    power = power_line(best, ranked, metric)
    cheaper = cheaper_line(best, ranked, metric)
    cost = cost_line(best)
    front = front_line(board, metric)
    return Recommendation(
        f"Recommended: {pair(best)}, {metric} {score(best, metric)} on {questions(best)}",
        (
            ("tier 1", tier_line(best, ranked, metric)),
            *((("power", power),) if power else ()),
            *((("cheaper", cheaper),) if cheaper else ()),
            *((("cost", cost),) if cost else ()),
            *((("front", front),) if front else ()),
            ("questions", questions_line(ranked)),
            objective,
            *((unranked,) if unranked[1] else ()),
        ),
    )


def pair(row: pd.Series) -> str:
    return f"{row['chunk_config']} x {row['profile']}"


def mean(row: pd.Series, metric: str) -> float:
    return number(row, f"{metric}_mean")


def number(row: pd.Series, column: str) -> float:
    """The row's value in ``column``; NaN when absent or empty."""
    value = row.get(column)
    return float("nan") if value is None or pd.isna(value) else float(value)


def score(row: pd.Series, metric: str) -> str:
    """``0.812 [0.77-0.85]``: the mean and its bootstrap 95% CI."""
    low, high = (number(row, f"{metric}_ci_{end}") for end in ("low", "high"))
    known = not (pd.isna(low) or pd.isna(high))
    return f"{mean(row, metric):.3f}" + (f" [{low:.2f}-{high:.2f}]" if known else "")


def questions(row: pd.Series) -> str:
    n = int(row["n_questions"])
    quick = row["evaluation_mode"] == "quick"
    return f"a quick sample of {n} questions" if quick else f"{n} questions"


def describe_metric(metric: str) -> str:
    """What ``span_recall_1000t`` or ``mrr`` measures, in words."""
    budget = _BUDGET_COLUMN.match(metric)
    if budget:
        name, tokens = budget.group("metric").replace("_", " "), int(budget.group("budget"))
        return f"{name} within the first {tokens:,} tokens of each setup's ranked chunks: the same context for all"
    return f"{metric.replace('_', ' ')} over each setup's k chunks"


def objective_line(board: pd.DataFrame, metric: str) -> str:
    parts = [f"{metric}, {describe_metric(metric)}; set in data/monitoring.yaml, leaderboard"]
    for column in ("ranked_by_note", "rank_constraint"):
        value = board[column].iloc[0] if len(board) else ""
        if isinstance(value, str) and value:
            parts.append(value)
    return "; ".join(parts)


def tier_of(row: pd.Series) -> int | None:
    tier = row.get("tier")
    return None if tier is None or pd.isna(tier) else int(tier)


def tied_with(best: pd.Series, ranked: list[pd.Series]) -> list[pd.Series]:
    """The ranked rows in the best one's tier, itself first (none when the board has no tiers)."""
    tier = tier_of(best)
    return [row for row in ranked if tier is not None and tier_of(row) == tier]


def tier_line(best: pd.Series, ranked: list[pd.Series], metric: str) -> str:
    test = best.get("tier_test")
    if not isinstance(test, str) or not test or tier_of(best) is None:
        return "not computed (a board built without per-question metrics)"
    alpha = float(best.get("tier_alpha", 0.05))
    how = f"({test}, Holm, alpha {alpha:g})"
    tied = tied_with(best, ranked)
    if len(tied) > 1:
        return f"these {len(tied)} setups are statistically tied on {metric} {how}: " + ", ".join(
            pair(row) for row in tied
        )
    if len(ranked) == 1:
        return "the only ranked setup"
    runner_up = ranked[1]
    return (
        f"alone: every other setup is significantly worse on {metric} {how}; the next best, "
        f"{pair(runner_up)}, scores {mean(runner_up, metric):.3f}"
    )


def power_line(best: pd.Series, ranked: list[pd.Series], metric: str) -> str:
    """What the questions can detect (power.py): the difference between the best and the next at 80 %
    power, and how many questions would separate the other tier-1 setups from the best at their
    observed differences ("" for a board without the figures, or with one ranked setup)."""
    comparisons = best.get("power_comparisons")
    if len(ranked) < 2 or comparisons is None or pd.isna(comparisons) or tier_of(best) is None:
        return ""
    alpha = float(best.get("tier_alpha", 0.05))
    level = f"alpha {alpha:g}" + (
        f"/{int(comparisons)}: Holm over the {int(comparisons)} setups tied with the best"
        if int(comparisons) > 1
        else ""
    )
    n = int(best["n_questions"])
    detectable = number(best, "power_detectable_difference")
    runner_up = next((row for row in ranked[1:] if differs_from_best(row)), None)
    if runner_up is None:
        line = f"every ranked setup scores like the best on every one of the {n} questions: nothing to size a difference by"
    elif pd.isna(detectable):
        line = f"{n} questions are too few to detect any difference at {percent(POWER)} power ({level})"
    else:
        which = "next" if runner_up is ranked[1] else "next that differs from it on some question"
        line = (
            f"{n} questions detect a difference of {detectable:.3f} in {metric} between the best and the "
            f"{which} ({pair(runner_up)}) at {percent(POWER)} power (sd of their per-question differences "
            f"{number(runner_up, 'power_difference_sd'):.3f}; two-sided, {level})"
        )
    tied = tied_with(best, ranked)[1:]
    if not tied:
        return (
            f"{line}; the best is alone in tier 1: these questions already separate it from every other setup"
        )
    return f"{line}; {separation(best, tied, metric)}"


def differs_from_best(row: pd.Series) -> bool:
    """Whether the row's per-question values differ from the best's somewhere (power.next_differing):
    a spread, or a mean difference some number of questions would detect."""
    return number(row, "power_difference_sd") > 0 or math.isfinite(number(row, "power_questions_needed"))


def separation(best: pd.Series, tied: list[pd.Series], metric: str) -> str:
    """How many questions would separate the best from each other tier-1 setup at its observed mean
    difference: from the fewest to the most, with the setups that need them; the setups with the
    best's mean apart (no number would)."""
    needs = [(number(row, "power_questions_needed"), row) for row in tied]
    finite = sorted(((n, row) for n, row in needs if math.isfinite(n)), key=lambda found: found[0])
    never = [row for n, row in needs if n == math.inf]
    lead = (
        "separating the other tier-1 setup from the best at its observed difference"
        if len(tied) == 1
        else f"separating the {len(tied)} other tier-1 setups from the best at their observed differences"
    )
    parts = []
    if len(finite) == 1:
        needed, row = finite[0]
        parts.append(f"{lead} would need {about(needed)} questions ({pair(row)}, {gap(best, row, metric)})")
    elif finite:
        (fewest, easiest), (most, hardest) = finite[0], finite[-1]
        parts.append(
            f"{lead} would need from {about(fewest)} questions ({pair(easiest)}, "
            f"{gap(best, easiest, metric)}) to {about(most)} ({pair(hardest)}, {gap(best, hardest, metric)})"
        )
    if never:
        one = len(never) == 1
        parts.append(
            f"{', '.join(pair(row) for row in never)} {'has' if one else 'have'} the best's mean {metric}: "
            f"no number of questions separates {'it' if one else 'them'} from the best"
        )
    return "; ".join(parts) or f"{lead}: not computed"


def gap(best: pd.Series, row: pd.Series, metric: str) -> str:
    return f"{mean(best, metric) - mean(row, metric):.3f} below the best"


def about(needed: float) -> str:
    """A question count rounded up to two significant digits: ``about 87``, ``about 2,400``; beyond a
    million, ``over a million`` (a difference that small is noise next to anything a team acts on)."""
    whole = math.ceil(needed)
    if whole > 1_000_000:
        return "over a million"
    if whole < 100:
        return f"about {whole}"
    step = 10 ** (len(str(whole)) - 2)
    return f"about {math.ceil(whole / step) * step:,}"


def percent(value: float) -> str:
    return f"{value * 100:g} %"


def cheaper_line(best: pd.Series, ranked: list[pd.Series], metric: str) -> str:
    """The trade-off against the next cheaper tied setup (the tied setup with the largest context below
    the best one's), and against the cheapest tied one when that is another ("" when the best is alone
    in its tier)."""
    tied = tied_with(best, ranked)[1:]
    if not tied:
        return ""
    tokens = context_tokens(best)
    if tokens is None:
        return (
            "unknown: the context size (context_tokens) was not measured (metrics written before it existed)"
        )
    measured = [(size, row) for row in tied if (size := context_tokens(row)) is not None]
    cheaper = [row for size, row in sorted(measured, key=lambda pair: pair[0]) if size < tokens]
    if not cheaper:
        return f"none: the recommended setup has the smallest context of its tier ({tokens:,.0f} tokens)"
    line = f"{pair(cheaper[-1])} (tied) {trade_off(best, cheaper[-1], metric)}"
    if len(cheaper) > 1:
        line += f"; the cheapest tied setup, {pair(cheaper[0])}, {trade_off(best, cheaper[0], metric)}"
    return line


def context_tokens(row: pd.Series) -> float | None:
    value = row.get(CONTEXT_TOKENS_MEAN)
    return None if value is None or pd.isna(value) else float(value)


def trade_off(best: pd.Series, other: pd.Series, metric: str) -> str:
    mine, theirs = context_tokens(best) or 0.0, context_tokens(other) or 0.0
    dollars = ""
    if not (pd.isna(number(best, USD_PER_1K)) or pd.isna(number(other, USD_PER_1K))):
        dollars = (
            f"; {cost_text(USD_PER_1K, number(other, USD_PER_1K))} vs "
            f"{cost_text(USD_PER_1K, number(best, USD_PER_1K))} per 1,000 questions"
        )
    return (
        f"gives the generator {mine - theirs:,.0f} fewer context tokens per question ({theirs:,.0f} vs "
        f"{mine:,.0f}{dollars}) for {mean(best, metric) - mean(other, metric):.3f} less {metric} "
        f"({mean(other, metric):.3f} vs {mean(best, metric):.3f})"
    )


def cost_line(row: pd.Series) -> str:
    """What the setup costs (core/evaluation/costs.py): its context, search latency, dollars per 1,000 questions
    with the assumptions behind them, and its index; "" when nothing was measured."""
    parts = []
    tokens = context_tokens(row)
    if tokens is not None:
        parts.append(f"{tokens:,.0f} context tokens a question")
    p50, p95 = number(row, LATENCY_P50), number(row, LATENCY_P95)
    if not pd.isna(p95):
        parts.append(f"search p50 {cost_text(LATENCY_P50, p50)}, p95 {cost_text(LATENCY_P95, p95)}")
    dollars = number(row, USD_PER_1K)
    basis = row.get(COST_BASIS)
    if not pd.isna(dollars):
        parts.append(
            f"{cost_text(USD_PER_1K, dollars)} per 1,000 questions"
            + (f" ({basis})" if isinstance(basis, str) and basis else "")
        )
    size = number(row, INDEX_BYTES)
    if not pd.isna(size):
        embedding = number(row, INDEX_USD)
        parts.append(
            f"index {cost_text(INDEX_BYTES, size)}"
            + (f", embedding it {cost_text(INDEX_USD, embedding)}" if not pd.isna(embedding) else "")
        )
    return ", ".join(parts)


def front_line(board: pd.DataFrame, metric: str) -> str:
    """The setups on the Pareto front of the objective against context tokens (pareto.py), cheapest
    first; "" when no ranked row has both."""
    steps = front_rows(board)
    if not steps:
        return ""
    ranked = sum(1 for _, row in board.iterrows() if is_ranked(row))
    listed = ", ".join(f"{pair(s.row)} ({s.cost:,.0f} tokens, {s.quality:.3f})" for s in steps)
    return (
        f"{len(steps)} of {ranked} ranked setups are on the Pareto front of {metric} against context "
        f"tokens (no other gives as much for less), cheapest first: {listed}; `rag-eval leaderboard "
        "--pareto` lists the front on other costs"
    )


def questions_line(ranked: list[pd.Series]) -> str:
    described = [row.get("question_generators") for row in ranked]
    generators = sorted(
        {
            name.strip()
            for value in described
            if isinstance(value, str)
            for name in value.split(",")
            if name.strip()
        }
    )
    n = sorted({int(row["n_questions"]) for row in ranked})
    who = f" from {', '.join(generators)}" if generators else ""
    line = f"{'/'.join(str(v) for v in n)} questions{who}"
    share = known_item_share(", ".join(generators))
    if share == "all":
        line += f"; WARNING: {KNOWN_ITEM_WARNING}"
    elif share == "some":
        line += f"; WARNING: partly {KNOWN_ITEM_WARNING}"
    return line


def unranked_line(board: pd.DataFrame) -> tuple[str, str]:
    labels = [rank_label(row) for _, row in board.iterrows()]
    counts = [
        (labels.count(NOT_COMPARABLE_MARK), f"not comparable (rank {NOT_COMPARABLE_MARK})"),
        (labels.count(EXCLUDED_LABEL), f"outside the constraint (rank {EXCLUDED_LABEL})"),
        (labels.count(REMOVED_LABEL), f"removed (rank {REMOVED_LABEL})"),
    ]
    return "not ranked", ", ".join(f"{n} {what}" for n, what in counts if n)


# -- the report's section (the terminal and markdown forms: render_text.py, render_markdown.py) ------


def recommendation_html(board: pd.DataFrame) -> str:
    """The report's section (every string escaped)."""
    recommendation = recommend(board)
    items = "".join(
        f'<li data-detail="{escape(label)}"><strong>{escape(label)}</strong>: {escape(text)}</li>'
        for label, text in recommendation.details
    )
    return (
        '<section id="recommendation"><h2>Which setup is best</h2>'
        f'<p class="recommended">{escape(recommendation.headline)}</p><ul>{items}</ul></section>'
    )
