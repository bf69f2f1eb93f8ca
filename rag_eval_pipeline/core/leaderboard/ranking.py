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

Only rows that were measured the same way are ranked together. Every renderer (the terminal table, the
asset's markdown, the HTML report) shows the others the same way, through ``rank_label``, ``row_note``
and ``footnotes``:

- **not comparable** (rank ``*``, not ranked): its chunk set covers other documents (``document_scope``:
  a chunk config applied to some documents only is evaluated on the questions about them,
  core/document_scope.py), it was evaluated on other questions (``dataset_sha256``,
  e.g. after a document was deleted and its questions went stale), in another mode (a quick run on a
  sample vs full runs), on another question sample (``question_set``), or before the objective's metric
  existed. Its numbers are that setup's latest measurement, listed after the ranked rows with a note
  saying what differs; re-evaluating it ranks it again. The reference is the value most configured rows
  share (all rows when none is configured); on a tie, the value of the most recently evaluated row:
  first the documents, then among the rows over them the dataset, the mode, then the question set.
- **excluded** (rank ``x``, not ranked): outside a constraint of the objective (``max_context_tokens``:
  its k chunks average more tokens than that, or their size was not measured while other rows' was).
- **removed** (rank ``-``, not ranked): its chunk config or profile is no longer in the config files. It is
  no longer a choice; it stays listed last, with its history, marked ``removed``. When the config files
  cannot be read nothing is known to be removed: ``removed`` is empty (the asset says why).
- **answer threshold** (rank ``3*``, ranked): its answers were judged with another ``semantic_dynamic``
  threshold than the reference. The ranking (retrieval) is fair; the marker says its answer columns are
  not. Rows without answer metrics have no threshold and are not compared on it.

Two things hold for the whole board, and ``footnotes`` says them under every view: when its questions
came from the known-item generator (bags of a passage's salient terms), keyword retrieval has an edge
over dense retrieval that real questions do not give it (``questions_footnote``); when references fall
in text the corpus holds more than once, the position-exact span metrics score a retrieved copy 0
(``duplication_footnote``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import pandas as pd

from ..comparability import Aspect, Basis
from ..costs import CONTEXT_TOKENS_MEAN, LATENCY_P95
from ..document_scope import WHOLE_CORPUS
from ..generation.sources import known_item_share
from ..metrics.names import SPAN_IOU
from ..metrics.reference_copies import RUN_DUPLICATION_COLUMNS, ReferenceDuplication
from ..monitoring_settings import LeaderboardSettings
from ..tables import records
from .power import board_power
from .tiers import TEST_NAME, statistical_tiers

NOT_COMPARABLE_MARK = "*"
EXCLUDED_LABEL = "x"
# Under a board whose questions are known-item queries (bags of a passage's salient terms).
KNOWN_ITEM_CAVEAT = (
    "bags of salient terms, which favour keyword retrieval): prefer an LLM generator or real questions "
    "to compare dense and keyword profiles"
)
REMOVED_LABEL = "-"
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
    # what each row does not share with the reference (core/comparability.py: the one rule)
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
        """What the reference rows were measured on (core/comparability.py)."""
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


# -- what the renderers show ---------------------------------------------------------------------------


def is_removed(row: pd.Series) -> bool:
    return flag(row, "removed")


def flag(row: pd.Series, column: str) -> bool:
    """A boolean column of the row; False when absent or unknown (boards written before it existed)."""
    value = row.get(column)
    return bool(value) if value is not None and not pd.isna(value) else False


def is_ranked(row: pd.Series) -> bool:
    rank = row.get("rank")
    return not is_removed(row) and rank is not None and not pd.isna(rank)


def is_not_comparable(row: pd.Series) -> bool:
    """Not measured like the reference rows: not ranked (other questions, mode or question sample, no
    objective metric), or ranked with answer columns judged with another threshold."""
    return any(flag(row, column) for column in (*COMPARABILITY_COLUMNS, "other_threshold"))


def is_excluded(row: pd.Series) -> bool:
    return flag(row, "excluded") and not is_removed(row)


def rank_label(row: pd.Series) -> str:
    """The rank as shown: ``3``; ``3*`` for a ranked row whose answer columns are not comparable; ``*``
    for a row not ranked because it is not comparable, ``x`` for one outside the objective's constraints,
    ``-`` for a removed row."""
    if is_ranked(row):
        return f"{int(row['rank'])}{NOT_COMPARABLE_MARK if is_not_comparable(row) else ''}"
    if is_removed(row) or "excluded" not in row.index:  # before the objective, an unranked row was removed
        return REMOVED_LABEL
    if any(flag(row, column) for column in COMPARABILITY_COLUMNS):
        return NOT_COMPARABLE_MARK
    return EXCLUDED_LABEL if is_excluded(row) else REMOVED_LABEL


def row_note(row: pd.Series) -> str:
    """What is special about the row ("" for most; boards written before notes existed have none)."""
    note = row.get("note")
    return "" if note is None or pd.isna(note) else str(note)


def profile_label(row: pd.Series) -> str:
    """The profile, marked when its current metrics come from a quick run (a sample of the questions)."""
    quick = row.get("evaluation_mode") == "quick"
    return f"{row['profile']} (quick, {row['n_questions']} questions)" if quick else str(row["profile"])


def has_notes(board: pd.DataFrame) -> bool:
    return any(row_note(row) for _, row in board.iterrows())


def footnotes(board: pd.DataFrame) -> list[str]:
    """The legend of the markers present on ``board``, with the reference the marked rows differ from."""
    lines = []
    rows = [row for _, row in board.iterrows()]
    labels = {rank_label(r) for r in rows}
    if any(is_ranked(r) and is_not_comparable(r) for r in rows):
        why = (
            "evaluated on other questions or with another answer threshold than most rows"
            if any(is_ranked(r) and flag(r, "other_dataset") for r in rows)  # a board written before
            else "its answers were judged with another semantic_dynamic threshold than most rows, so its "
            "answer columns are (its rank, on retrieval, is fair)"
        )
        lines.append(
            f"rank N{NOT_COMPARABLE_MARK}: not comparable with the other rows: {why} "
            f"({reference_description(board)}); re-evaluate these partitions to compare them"
        )
    if NOT_COMPARABLE_MARK in labels:
        lines.append(
            f"rank {NOT_COMPARABLE_MARK}: not ranked, not comparable with the ranked rows: a chunk set over "
            f"other documents, evaluated on other questions, in another mode, on another question sample or without {ranked_by(board)} "
            f"({reference_description(board)}); re-evaluate these partitions to rank them"
        )
    if EXCLUDED_LABEL in labels:
        constraint = str(board["rank_constraint"].iloc[0]) if "rank_constraint" in board.columns else ""
        lines.append(
            f"rank {EXCLUDED_LABEL}: not ranked, outside the objective's constraint ({constraint}: the "
            "leaderboard section of data/monitoring.yaml)"
        )
    if any(is_removed(r) for r in rows):
        lines.append(
            f"rank {REMOVED_LABEL}: removed, its chunk config or profile is no longer in the config files; "
            "listed with its history, not ranked"
        )
    if "removed" in board.columns and len(board) and board["removed"].isna().all():
        lines.append("the config files could not be read: no row is marked removed")
    extra = [line for line in (questions_footnote(board), duplication_footnote(board)) if line]
    return lines + extra


def ranked_by(board: pd.DataFrame) -> str:
    """The metric the board is ranked by (``span_iou`` on a board written before the objective)."""
    if "ranked_by" in board.columns and len(board):
        return str(board["ranked_by"].iloc[0])
    return SPAN_IOU


def questions_footnote(board: pd.DataFrame) -> str:
    """The line that says the rows were evaluated on known-item questions, which favour keyword retrieval
    (core/generation/sources.py); "" when none was, or the rows do not say who made their questions."""
    if "question_generators" not in board.columns:
        return ""
    shares = {known_item_share("" if pd.isna(v) else str(v)) for v in board["question_generators"]}
    if shares <= {"none"}:
        return ""
    which = "known-item" if shares == {"all"} else "partly known-item"
    return f"questions: {which} ({KNOWN_ITEM_CAVEAT}"


def duplication_footnote(board: pd.DataFrame) -> str:
    """The warning that some references lie in duplicated text, with the counts of the row evaluated on
    the most questions (rows on one dataset agree; a quick row counts its sample); "" when no row has
    such a reference or the rows predate the counts."""
    columns = ["n_questions", *RUN_DUPLICATION_COLUMNS]
    if not set(columns) <= set(board.columns):
        return ""
    known = board[columns].dropna()
    if known.empty:
        return ""
    top = known.astype("int64").sort_values(columns, ascending=False, kind="stable").iloc[0]
    counts = ReferenceDuplication(*(int(top[c]) for c in RUN_DUPLICATION_COLUMNS))
    return counts.describe(int(top["n_questions"]))


def reference_description(board: pd.DataFrame) -> str:
    """The questions, mode and threshold of the rows the marked ones differ from."""
    parts: list[str] = []
    comparable = [
        not any(flag(r, c) for c in ("other_documents", "other_dataset", "other_mode", "other_question_set"))
        for _, r in board.iterrows()
    ]
    same = board[comparable] if any(comparable) else board
    if len(same):
        dataset = same["dataset_sha256"].iloc[0]
        n = reference_questions(same, dataset)
        parts.append(
            f"{n} questions, dataset {str(dataset)[:8]}" if n is not None else f"dataset {str(dataset)[:8]}"
        )
        if "other_mode" in board.columns and board["other_mode"].astype(bool).any():
            parts.append(f"{same['evaluation_mode'].iloc[0]} runs")
    if "answer_threshold" in board.columns and "other_threshold" in board.columns:
        agreeing = thresholds(board.loc[~board["other_threshold"].astype(bool), "answer_threshold"]).dropna()
        if len(agreeing):
            parts.append(f"threshold {agreeing.iloc[0]:.2f}")
    return "reference: " + ", ".join(parts) if parts else "reference: n/a"


def first_ranked(board: pd.DataFrame) -> pd.Series | None:
    """The best ranked row; None when no row is ranked (all removed, not comparable or excluded)."""
    return next((row for _, row in board.iterrows() if is_ranked(row)), None)


def pairs_where(board: pd.DataFrame, test: Callable[[pd.Series], bool]) -> list[str]:
    """``chunk config x profile`` of the rows that pass ``test`` (``is_removed``, ``is_not_comparable``)."""
    return [f"{r['chunk_config']} x {r['profile']}" for _, r in board.iterrows() if test(r)]


def board_facts(board: pd.DataFrame) -> dict[str, str | int | float]:
    """What a ranked board says at a glance (the leaderboard asset's metadata): its size, what it is
    ranked by, the best ranked pair and its score, its first tier, and the pairs it cannot vouch for."""
    best = first_ranked(board)
    metric = ranked_by(board)
    facts: dict[str, str | int | float] = {
        "n_partitions": len(board),
        "n_ranked": int(board["rank"].notna().sum()),
        "ranked_by": metric,
        "best": f"{best['chunk_config']} x {best['profile']}" if best is not None else "none ranked",
    }
    if best is not None and f"{metric}_mean" in board.columns:
        facts["best_score"] = float(best[f"{metric}_mean"])
    if "tier" in board.columns and board["tier"].notna().any():
        facts["tier_1"] = ", ".join(pairs_where(board, lambda r: is_ranked(r) and r.get("tier") == 1))
    facts.update(power_facts(board))
    facts["removed"] = ", ".join(pairs_where(board, is_removed)) or (
        "unknown: the config files could not be read" if board["removed"].isna().all() else "none"
    )
    facts["not_comparable"] = ", ".join(pairs_where(board, is_not_comparable)) or "none"
    facts["excluded"] = ", ".join(pairs_where(board, is_excluded)) or "none"
    return facts


def power_facts(board: pd.DataFrame) -> dict[str, str | int | float]:
    """The board's power figures (power.py) as metadata the UI plots: the difference detectable between
    the best and the next at 80 % power, and the questions that would separate every other tier-1
    setup from the best at its observed difference (the most any one needs; absent when the best is
    alone in tier 1 or a tied setup has the best's mean, which no number of questions separates)."""
    if "power_detectable_difference" not in board.columns or not len(board):
        return {}
    facts: dict[str, str | int | float] = {}
    detectable = board["power_detectable_difference"].iloc[0]
    if not pd.isna(detectable):
        facts["power_detectable_difference"] = float(detectable)
    tied = [
        float(r["power_questions_needed"])
        for _, r in board.iterrows()
        if is_ranked(r) and in_tier_1(r) and not pd.isna(r["power_questions_needed"])
    ]
    if tied and all(math.isfinite(n) for n in tied):
        facts["power_questions_to_separate_tier_1"] = int(max(tied))
    return facts


def in_tier_1(row: pd.Series) -> bool:
    tier = row.get("tier")
    return tier is not None and not pd.isna(tier) and int(tier) == 1
