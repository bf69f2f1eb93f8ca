"""Ranking the leaderboard by its objective, and saying which of its rows it cannot vouch for.

A row is one chunk config x profile with its latest metrics (``board.py``). The rows are ranked by the
objective of data/monitoring.yaml's ``leaderboard`` section (``LeaderboardSettings``): the mean of one
per-question metric, by default span recall at a 1,000-token context budget (``span_recall_1000t``: every
setup is given the same amount of context, so a bigger chunk or a larger k cannot buy recall with more
text). Metrics written before that column existed fall back to the metric over each setup's k chunks
(``span_recall``), and the board says so (``ranked_by_note``). Ties go to the setup with the smaller
context (``context_tokens_mean``), then by name, so the order is stable. The ranked rows get statistical
tiers (``tiers.py``) from their per-question values, and the power figures of those values (``power.py``:
the difference the questions detect between the best and the next, the questions that would separate
each setup from the best).

Only rows that were measured the same way are ranked together: a row is flagged ``other_documents``,
``other_dataset``, ``other_mode``, ``other_question_set`` or ``no_objective`` (not comparable: not
ranked), ``excluded`` (outside a constraint of the objective: not ranked), ``removed`` (no longer
configured: not ranked) or ``other_threshold`` (ranked; its answer columns are not comparable). What
each flag means and how every view shows it: ``view.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import pandas as pd

from ..evaluation.comparability import Aspect, Basis
from ..evaluation.costs import CONTEXT_TOKENS_MEAN, LATENCY_P95
from ..evaluation.document_scope import WHOLE_CORPUS
from ..settings.monitoring_settings import LeaderboardSettings
from ..tables import records
from .power import board_power
from .tiers import TEST_NAME, statistical_tiers

# Why a row is not ranked with the others, in the order a note names them (see the module docstring).
COMPARABILITY_COLUMNS = (
    "other_documents",
    "other_dataset",
    "other_mode",
    "other_question_set",
    "no_objective",
)
# The columns that flag a row measured otherwise than the reference, by what differs.
ASPECT_COLUMNS: dict[Aspect, str] = {
    "documents": "other_documents",
    "dataset": "other_dataset",
    "mode": "other_mode",
    "question_set": "other_question_set",
}
# A reference value: a dataset hash, a mode, a question set or a threshold.
Reference = str | float
Pair = tuple[str, str]


@dataclass(frozen=True)
class ConfiguredNames:
    """The chunk configs and profiles the config files define now."""

    chunk_configs: frozenset[str]
    profiles: frozenset[str]

    def removal(self, chunk_config: str, profile: str) -> str:
        """What of the pair is no longer configured ("" when both are)."""
        gone = [
            kind
            for kind, name, known in (
                ("chunk config", chunk_config, self.chunk_configs),
                ("profile", profile, self.profiles),
            )
            if name not in known
        ]
        return f"{' and '.join(gone)} removed" if gone else ""


@dataclass(frozen=True)
class RankingMetric:
    """The per-question column a board is ranked by, and why it is not the objective's ("" when it is)."""

    column: str
    note: str


def ranking_metric(frame: pd.DataFrame, objective: LeaderboardSettings) -> RankingMetric:
    """The objective's column when some row has it; else, for a budget metric, the same metric over all
    k chunks, said plainly (metrics written before the context-budget metrics existed)."""
    wanted = objective.column
    if has_values(frame, wanted) or wanted == objective.rank_by:
        return RankingMetric(wanted, "")
    return RankingMetric(
        objective.rank_by,
        f"ranked by {objective.rank_by} over each setup's k chunks, not by {wanted}: no row has {wanted} "
        f"(metrics written before it existed), and {objective.rank_by} favours setups that retrieve more "
        f"text; re-evaluate to rank at the {objective.context_budget_tokens}-token budget",
    )


def has_values(frame: pd.DataFrame, metric: str) -> bool:
    return has_column_values(frame, f"{metric}_mean")


def rank_board(
    rows: pd.DataFrame,
    configured: ConfiguredNames | None,
    objective: LeaderboardSettings | None = None,
    questions: Mapping[Pair, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """``rows`` (one per chunk config x profile, with the ``*_mean`` metrics, ``dataset_sha256``,
    ``n_questions``, ``evaluation_mode``, ``metrics_created_at``, where known ``question_set`` and, where
    answers were evaluated, ``answer_threshold``: as ``board.build_board`` makes them) as the leaderboard:
    ``rank`` first (nullable: only comparable, configured rows within the constraints have one), the
    ranked rows in rank order, then the not comparable, the excluded and the removed ones, each group
    best first; with the columns ``removed``, ``other_*``, ``no_objective``, ``excluded``, ``note`` and
    the objective's ``ranked_by``, ``ranked_by_note``, ``rank_constraint``.

    ``configured`` None: the config files could not be read. ``objective`` None: the default one.
    ``questions``: each pair's per-question metrics (its ``retrieval_metrics`` table), for the tiers
    (``tier``, ``tier_p_value``, ``tier_test``, ``tier_alpha``) and what the questions can detect
    (``POWER_COLUMNS``, ``power_comparisons``: power.py); without them both are empty."""
    objective = objective or LeaderboardSettings()
    frame = rows.copy()
    for column in ("answer_threshold", CONTEXT_TOKENS_MEAN):
        if column not in frame.columns:
            frame[column] = float("nan")
    if "question_set" not in frame.columns:
        frame["question_set"] = pd.Series([pd.NA] * len(frame), index=frame.index, dtype="string")
    if "document_scope" not in frame.columns:  # boards of metrics written before scopes: whole corpus
        frame["document_scope"] = WHOLE_CORPUS
    frame["document_scope"] = frame["document_scope"].fillna(WHOLE_CORPUS).astype("string")
    frame["_removal"] = [
        configured.removal(str(c), str(p)) if configured is not None else ""
        for c, p in zip(frame["chunk_config"], frame["profile"], strict=True)
    ]
    frame["removed"] = pd.array(
        [bool(r) if configured is not None else None for r in frame["_removal"]], dtype="boolean"
    )
    removed = frame["removed"].fillna(False).astype(bool)
    candidates = frame[~removed] if (~removed).any() else frame
    metric = ranking_metric(candidates, objective)
    frame["_score"] = (
        pd.to_numeric(frame[f"{metric.column}_mean"], errors="coerce").astype("float64")
        if f"{metric.column}_mean" in frame.columns
        else float("nan")
    )
    references = comparison_references(frame, candidates)
    # what each row does not share with the reference (core/evaluation/comparability.py: the one rule)
    aspects = [Basis.of(row).first_difference(references.basis) for row in records(frame)]
    for aspect, column in ASPECT_COLUMNS.items():
        frame[column] = pd.Series([a == aspect for a in aspects], index=frame.index, dtype=bool)
    frame["no_objective"] = frame["_score"].isna()
    frame["other_threshold"] = differs(thresholds(frame["answer_threshold"]), references.threshold)
    constraint = Constraints.of(objective, candidates)
    frame["excluded"] = [constraint.violated(row) != "" for _, row in frame.iterrows()]
    comparable = ~frame[list(COMPARABILITY_COLUMNS)].any(axis=1)
    frame["_group"] = 3
    frame.loc[~removed & frame["excluded"], "_group"] = 2
    frame.loc[~removed & ~comparable, "_group"] = 1
    frame.loc[~removed & comparable & ~frame["excluded"], "_group"] = 0
    frame = frame.sort_values(
        ["_group", "_score", CONTEXT_TOKENS_MEAN, "chunk_config", "profile"],
        ascending=[True, False, True, True, True],
        kind="stable",
        na_position="last",
    ).reset_index(drop=True)
    ranked = frame["_group"] == 0
    frame.insert(0, "rank", pd.Series([None] * len(frame), index=frame.index, dtype="Int64"))
    frame.loc[ranked, "rank"] = range(1, int(ranked.sum()) + 1)
    frame["note"] = [row_notes(row, references, metric.column, constraint) for _, row in frame.iterrows()]
    frame["ranked_by"] = metric.column
    frame["ranked_by_note"] = metric.note
    frame["rank_constraint"] = constraint.description
    add_tiers(frame, ranked, metric.column, objective.alpha, questions)
    return frame.drop(columns=["_removal", "_score", "_group"])


@dataclass(frozen=True)
class ComparisonReferences:
    """The values a row must share with the reference rows to be ranked with them (None: not known)."""

    documents: Reference | None
    dataset: Reference | None
    mode: Reference | None
    question_set: Reference | None
    threshold: Reference | None
    n_questions: int | None
    threshold_how: str

    @property
    def basis(self) -> Basis:
        """What the reference rows were measured on (core/evaluation/comparability.py)."""
        return Basis(
            str(self.documents) if self.documents is not None else WHOLE_CORPUS,
            _text(self.dataset),
            _text(self.mode),
            _text(self.question_set),
            self.n_questions,
        )


def _text(value: Reference | None) -> str | None:
    return str(value) if value is not None else None


def comparison_references(frame: pd.DataFrame, candidates: pd.DataFrame) -> ComparisonReferences:
    """The documents most candidates cover (a tie goes to the whole corpus), the dataset most of those
    share, then the mode most candidates on it share, then the question set most candidates on both
    share; ties go to the most recently evaluated row."""
    when = pd.to_datetime(frame["metrics_created_at"], utc=True)
    scopes = candidates["document_scope"].astype("string")
    documents = reference_value(scopes, when, prefer=WHOLE_CORPUS)
    over_them = candidates[equals(scopes, documents)]
    dataset = reference_value(over_them["dataset_sha256"].astype("string"), when)
    on_dataset = over_them[equals(over_them["dataset_sha256"].astype("string"), dataset)]
    modes = on_dataset["evaluation_mode"].astype("string")
    # a tie between quick and full runs goes to the full runs: they measure every question
    mode = reference_value(modes, when, prefer="full")
    same_mode = on_dataset[equals(modes, mode)]
    question_set = reference_value(same_mode["question_set"].astype("string"), when)
    threshold = reference_value(thresholds(candidates["answer_threshold"]), when)
    return ComparisonReferences(
        documents,
        dataset,
        mode,
        question_set,
        threshold,
        reference_questions(frame, dataset),
        threshold_how_of(frame, threshold),
    )


@dataclass(frozen=True)
class Limit:
    """One constraint of the objective: a row whose ``column`` is above ``limit`` is not ranked."""

    key: str  # the setting: max_context_tokens, max_p95_latency_ms
    column: str  # the board's column it bounds
    what: str  # what the column measures, in words
    unit: str
    limit: float

    def describe(self) -> str:
        return f"{self.key} {self.limit:,g}"

    def violated(self, row: pd.Series) -> str:
        """Why the row is outside this limit ("" when it is not)."""
        value = row.get(self.column)
        if value is None or pd.isna(value):
            return (
                f"{self.column.removesuffix('_mean')} not measured (written before it existed): re-evaluate"
            )
        if float(value) > self.limit:
            return f"{self.what} {float(value):,.0f} {self.unit} > {self.describe()}"
        return ""


# The objective's constraints: its setting, the board column it bounds, what that is, and its unit.
LIMITS = (
    ("max_context_tokens", CONTEXT_TOKENS_MEAN, "context", "tokens"),
    ("max_p95_latency_ms", LATENCY_P95, "p95 search latency", "ms"),
)


@dataclass(frozen=True)
class Constraints:
    """The objective's constraints as applied to a board (``max_context_tokens``, ``max_p95_latency_ms``).
    A limit no row measured (metrics written before its column existed) is not applied, and
    ``description`` says so."""

    limits: tuple[Limit, ...]
    description: str

    @classmethod
    def of(cls, objective: LeaderboardSettings, candidates: pd.DataFrame) -> Constraints:
        limits, parts = [], []
        for key, column, what, unit in LIMITS:
            limit = getattr(objective, key)
            if limit is None:
                continue
            found = Limit(key, column, what, unit, float(limit))
            if has_column_values(candidates, column):
                limits.append(found)
                parts.append(found.describe())
            else:
                parts.append(
                    f"{found.describe()} not applied: no row measured {column.removesuffix('_mean')} "
                    "(metrics written before it existed); re-evaluate to apply it"
                )
        return cls(tuple(limits), "; ".join(parts))

    def violated(self, row: pd.Series) -> str:
        """Why the row is outside the constraints ("" when it is not)."""
        return "; ".join(reason for limit in self.limits if (reason := limit.violated(row)))


def has_column_values(frame: pd.DataFrame, column: str) -> bool:
    return column in frame.columns and bool(pd.to_numeric(frame[column], errors="coerce").notna().any())


def row_notes(row: pd.Series, references: ComparisonReferences, metric: str, constraint: Constraints) -> str:
    parts = [str(row["_removal"])] if row["_removal"] else []
    for aspect, column in ASPECT_COLUMNS.items():
        if row[column]:
            parts.append(Basis.of({str(k): v for k, v in row.items()}).describe(aspect, references.basis))
    if row["no_objective"]:
        parts.append(f"no {metric} (metrics written before it existed): re-evaluate to rank it")
    if row["excluded"]:
        parts.append(constraint.violated(row))
    if row["other_threshold"]:
        parts.append(threshold_note(row, references.threshold, references.threshold_how))
    return "; ".join(parts)


def add_tiers(
    frame: pd.DataFrame,
    ranked: pd.Series,
    metric: str,
    alpha: float,
    questions: Mapping[Pair, pd.DataFrame] | None,
) -> None:
    """The ranked rows' statistical tiers on ``metric``'s per-question values (tiers.py), and their power
    figures (power.py); empty without ``questions`` or when a ranked pair's values are missing."""
    frame["tier"] = pd.Series([None] * len(frame), index=frame.index, dtype="Int64")
    frame["tier_p_value"] = float("nan")
    frame["tier_test"] = ""
    frame["tier_alpha"] = alpha
    for column in POWER_COLUMNS:
        frame[column] = float("nan")
    frame["power_comparisons"] = pd.Series([None] * len(frame), index=frame.index, dtype="Int64")
    order = frame.index[ranked]
    pairs = [(str(frame.at[i, "chunk_config"]), str(frame.at[i, "profile"])) for i in order]
    if questions is None or not pairs:
        return
    tables = [questions.get(pair) for pair in pairs]
    if any(t is None or metric not in t.columns or "question_id" not in t.columns for t in tables):
        return
    values = [
        pd.to_numeric(t[metric], errors="coerce").set_axis(t["question_id"].astype(str))
        for t in tables
        if t is not None
    ]
    verdicts = statistical_tiers(values, alpha)
    frame.loc[order, "tier"] = [v.tier for v in verdicts]
    frame.loc[order, "tier_p_value"] = [v.p_value for v in verdicts]
    frame["tier_test"] = TEST_NAME
    add_power(frame, order, values, [v.tier for v in verdicts], alpha)


# The power figures of a ranked board (power.py): on every row, the difference its questions detect
# between the best and the next at 80 % power (NaN: not with so few questions) and Holm's share of
# alpha (``power_comparisons``); on each ranked row but the best, the standard deviation of its
# per-question differences from the best and the questions that would separate it from the best at its
# observed difference (inf: no number would, the means are equal).
POWER_COLUMNS = ("power_detectable_difference", "power_difference_sd", "power_questions_needed")


def add_power(
    frame: pd.DataFrame, order: pd.Index, values: list[pd.Series], tiers: list[int], alpha: float
) -> None:
    """The ``POWER_COLUMNS`` and ``power_comparisons`` of the ranked rows ``order`` (power.py)."""
    found = board_power(values, tiers, alpha)
    frame["power_comparisons"] = pd.Series([found.comparisons] * len(frame), index=frame.index, dtype="Int64")
    frame["power_detectable_difference"] = found.detectable if found.detectable is not None else float("nan")
    for index, challenger in zip(order, found.challengers, strict=True):
        if challenger is None:
            continue
        frame.at[index, "power_difference_sd"] = challenger.differences.sd
        needed = challenger.questions_needed
        frame.at[index, "power_questions_needed"] = float(needed) if needed is not None else float("inf")


def thresholds(values: pd.Series) -> pd.Series:
    """Thresholds compared at four decimals (a fitted threshold is a multiple of 0.05)."""
    return pd.to_numeric(values, errors="coerce").astype("float64").round(4)


def equals(values: pd.Series, reference: Reference | None) -> pd.Series:
    """True where a value is the reference (False everywhere without a reference)."""
    if reference is None:
        return pd.Series(False, index=values.index, dtype=bool)
    return values.eq(str(reference) if isinstance(reference, str) else reference).fillna(False).astype(bool)


def differs(values: pd.Series, reference: Reference | None) -> pd.Series:
    """True where a value is present and not the reference (False everywhere without a reference)."""
    if reference is None:
        return pd.Series(False, index=values.index, dtype=bool)
    return (values.notna() & values.ne(reference)).fillna(False).astype(bool)


def reference_value(values: pd.Series, when: pd.Series, prefer: Reference | None = None) -> Reference | None:
    """The value most rows share; on a tie, ``prefer`` if it is among the tied values, else the value of
    the most recent row among the tied ones; None when no row has a value."""
    present = values.dropna()
    if present.empty:
        return None
    counts = present.value_counts(sort=False)
    tied = counts[counts == counts.max()].index
    if len(tied) == 1:
        return cast(Reference, tied[0])
    if prefer is not None and prefer in set(tied):
        return prefer
    candidates = present[present.isin(tied)]
    return cast(Reference, candidates[when[candidates.index].sort_values(kind="stable").index[-1]])


def reference_questions(frame: pd.DataFrame, dataset: Reference | None) -> int | None:
    """How many questions the reference dataset has: the most common count of the full-mode rows on it
    (a quick row counts its sample)."""
    if dataset is None:
        return None
    on_reference = frame[frame["dataset_sha256"].astype("string").eq(dataset).fillna(False).astype(bool)]
    counts = on_reference[on_reference["evaluation_mode"] != "quick"]["n_questions"].dropna()
    return int(counts.value_counts().index[0]) if len(counts) else None


def threshold_how_of(frame: pd.DataFrame, threshold: Reference | None) -> str:
    if threshold is None or "answer_threshold_how" not in frame.columns:
        return ""
    same = thresholds(frame["answer_threshold"]).eq(threshold).fillna(False).astype(bool)
    hows = frame[same]["answer_threshold_how"].dropna()
    return str(hows.value_counts().index[0]) if len(hows) else ""


def threshold_note(row: pd.Series, threshold: Reference | None, reference_how: str) -> str:
    how = row.get("answer_threshold_how")
    how = "" if how is None or pd.isna(how) else str(how)
    value = float(row["answer_threshold"])
    reference = float(threshold) if threshold is not None else float("nan")
    if how and reference_how and how != reference_how:
        return f"threshold {value:.2f} ({how}) vs {reference:.2f} ({reference_how})"
    return f"threshold {value:.2f} vs {reference:.2f}"
