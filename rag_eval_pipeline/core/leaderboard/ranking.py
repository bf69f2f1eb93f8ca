"""Ranking the leaderboard, and saying which of its rows it cannot vouch for.

A row is one chunk config x profile with its latest metrics (``board.py``). Two things keep a row from
being a fair competitor of the others; every renderer (the terminal table, the asset's markdown, the HTML
report) shows them the same way, through ``rank_label``, ``row_note`` and ``footnotes``:

- **removed**: its chunk config or profile is no longer in the config files. It is no longer a choice, so
  it is not ranked (``rank`` is empty, shown ``-``); it stays listed after the ranked rows, with its
  history, marked ``removed``. When the config files cannot be read nothing is known to be removed:
  every row is ranked and ``removed`` is empty (the asset says why).
- **not comparable** (``*``): it was computed on other questions (``dataset_sha256``, e.g. after a
  document was deleted and its questions went stale) or with another ``semantic_dynamic`` threshold than
  the reference. It keeps its rank: its numbers are still that setup's latest measurement, and the best
  setup should not vanish from the top because the others were not re-evaluated yet; the marker says the
  order between marked and unmarked rows is not a fair comparison, and re-evaluating clears it.

The reference is the value most ranked rows share (all rows when none is ranked); on a tie, the value of
the most recently evaluated row. Rows without answer metrics have no threshold and are not compared on it.

Two things hold for the whole board, and ``footnotes`` says them under every view: when its questions
came from the known-item generator (bags of a passage's salient terms), keyword retrieval has an edge
over dense retrieval that real questions do not give it (``questions_footnote``); when references fall
in text the corpus holds more than once, the position-exact span metrics score a retrieved copy 0
(``duplication_footnote``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import pandas as pd

from ..generation.sources import known_item_share
from ..metrics.reference_copies import RUN_DUPLICATION_COLUMNS, ReferenceDuplication

# The order of the ranked rows: best span IoU first; ties by recall, then by name, so it is stable.
RANK_BY = ("span_iou_mean", "span_recall_mean", "chunk_config", "profile")
RANK_ASCENDING = (False, False, True, True)
NOT_COMPARABLE_MARK = "*"
# Under a board whose questions are known-item queries (bags of a passage's salient terms).
KNOWN_ITEM_CAVEAT = (
    "bags of salient terms, which favour keyword retrieval): prefer an LLM generator or real questions "
    "to compare dense and keyword profiles"
)
REMOVED_LABEL = "-"
# A reference value: a dataset hash or a threshold.
Reference = str | float


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


def rank_board(rows: pd.DataFrame, configured: ConfiguredNames | None) -> pd.DataFrame:
    """``rows`` (one per chunk config x profile, with the ``*_mean`` metrics, ``dataset_sha256``,
    ``n_questions``, ``evaluation_mode``, ``metrics_created_at`` and, where answers were evaluated,
    ``answer_threshold``: as ``board.build_board`` makes them) as the leaderboard: ``rank`` first
    (nullable: removed rows have none), configured rows in rank order, then the removed ones in the same
    order, with the columns ``removed``, ``other_dataset``, ``other_threshold`` and ``note``.
    ``configured`` None: the config files could not be read."""
    frame = rows.copy()
    if "answer_threshold" not in frame.columns:
        frame["answer_threshold"] = float("nan")
    frame["_removal"] = [
        configured.removal(str(c), str(p)) if configured is not None else ""
        for c, p in zip(frame["chunk_config"], frame["profile"], strict=True)
    ]
    frame["removed"] = pd.array(
        [bool(r) if configured is not None else None for r in frame["_removal"]], dtype="boolean"
    )
    frame = frame.sort_values(
        ["removed", *RANK_BY], ascending=[True, *RANK_ASCENDING], kind="stable", na_position="first"
    ).reset_index(drop=True)
    ranked = ~frame["removed"].fillna(False).astype(bool)
    frame.insert(0, "rank", pd.Series([None] * len(frame), index=frame.index, dtype="Int64"))
    frame.loc[ranked, "rank"] = range(1, int(ranked.sum()) + 1)
    reference = frame[ranked] if ranked.any() else frame
    when = pd.to_datetime(frame["metrics_created_at"], utc=True)
    dataset = reference_value(reference["dataset_sha256"].astype("string"), when)
    threshold = reference_value(thresholds(reference["answer_threshold"]), when)
    frame["other_dataset"] = differs(frame["dataset_sha256"].astype("string"), dataset)
    frame["other_threshold"] = differs(thresholds(frame["answer_threshold"]), threshold)
    reference_n = reference_questions(frame, dataset)
    reference_how = threshold_how_of(frame, threshold)
    notes = []
    for _, row in frame.iterrows():
        parts = [str(row["_removal"])] if row["_removal"] else []
        if row["other_dataset"]:
            parts.append(questions_note(row, dataset, reference_n))
        if row["other_threshold"]:
            parts.append(threshold_note(row, threshold, reference_how))
        notes.append("; ".join(parts))
    frame["note"] = notes
    return frame.drop(columns="_removal")


def thresholds(values: pd.Series) -> pd.Series:
    """Thresholds compared at four decimals (a fitted threshold is a multiple of 0.05)."""
    return pd.to_numeric(values, errors="coerce").astype("float64").round(4)


def differs(values: pd.Series, reference: Reference | None) -> pd.Series:
    """True where a value is present and not the reference (False everywhere without a reference)."""
    if reference is None:
        return pd.Series(False, index=values.index, dtype=bool)
    return (values.notna() & values.ne(reference)).fillna(False).astype(bool)


def reference_value(values: pd.Series, when: pd.Series) -> Reference | None:
    """The value most rows share; on a tie, the value of the most recent row among the tied ones; None
    when no row has a value."""
    present = values.dropna()
    if present.empty:
        return None
    counts = present.value_counts(sort=False)
    tied = counts[counts == counts.max()].index
    if len(tied) == 1:
        return cast(Reference, tied[0])
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


def questions_note(row: pd.Series, dataset: Reference | None, reference_n: int | None) -> str:
    n = row.get("n_questions")
    quick = row.get("evaluation_mode") == "quick"
    if reference_n is not None and not quick and pd.notna(n) and int(n) != reference_n:
        return f"other questions: {int(n)} vs {reference_n}"
    return f"other questions: dataset {str(row['dataset_sha256'])[:8]} vs {str(dataset)[:8]}"


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
    value = row.get("removed")
    return bool(value) if value is not None and not pd.isna(value) else False


def is_not_comparable(row: pd.Series) -> bool:
    return any(bool(row.get(column, False)) for column in ("other_dataset", "other_threshold"))


def rank_label(row: pd.Series) -> str:
    """The rank as shown: ``-`` for a removed row, ``3*`` for a row not comparable with the rest."""
    rank = row.get("rank")
    if is_removed(row) or rank is None or pd.isna(rank):
        return REMOVED_LABEL
    return f"{int(rank)}{NOT_COMPARABLE_MARK if is_not_comparable(row) else ''}"


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
    """The legend of the markers present on ``board``, with the reference the ``*`` rows differ from."""
    lines = []
    rows = [row for _, row in board.iterrows()]
    if any(is_not_comparable(r) for r in rows):
        lines.append(
            f"rank N{NOT_COMPARABLE_MARK}: not comparable with the other rows: evaluated on other questions or "
            f"with another answer threshold than most rows ({reference_description(board)}); "
            "re-evaluate these partitions to compare them"
        )
    if any(is_removed(r) for r in rows):
        lines.append(
            f"rank {REMOVED_LABEL}: removed, its chunk config or profile is no longer in the config files; "
            "listed with its history, not ranked"
        )
    if "removed" in board.columns and len(board) and board["removed"].isna().all():
        lines.append("the config files could not be read: every row is ranked, none is marked removed")
    extra = [line for line in (questions_footnote(board), duplication_footnote(board)) if line]
    return lines + extra


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
    parts: list[str] = []
    same = board[~board["other_dataset"].astype(bool)] if "other_dataset" in board.columns else board
    if len(same):
        n = reference_questions(same, same["dataset_sha256"].iloc[0])
        parts.append(
            f"{n} questions, dataset {str(same['dataset_sha256'].iloc[0])[:8]}"
            if n is not None
            else f"dataset {str(same['dataset_sha256'].iloc[0])[:8]}"
        )
    if "answer_threshold" in board.columns and "other_threshold" in board.columns:
        agreeing = thresholds(board.loc[~board["other_threshold"].astype(bool), "answer_threshold"]).dropna()
        if len(agreeing):
            parts.append(f"threshold {agreeing.iloc[0]:.2f}")
    return "reference: " + ", ".join(parts) if parts else "reference: n/a"


def first_ranked(board: pd.DataFrame) -> pd.Series | None:
    """The best ranked row; None when no row is ranked (all removed, or an empty board)."""
    return next((row for _, row in board.iterrows() if rank_label(row) != REMOVED_LABEL), None)


def pairs_where(board: pd.DataFrame, test: Callable[[pd.Series], bool]) -> list[str]:
    """``chunk config x profile`` of the rows that pass ``test`` (``is_removed``, ``is_not_comparable``)."""
    return [f"{r['chunk_config']} x {r['profile']}" for _, r in board.iterrows() if test(r)]


def board_facts(board: pd.DataFrame) -> dict[str, str | int | float]:
    """What a ranked board says at a glance (the leaderboard asset's metadata): its size, the best ranked
    pair and its span IoU, and the pairs it cannot vouch for."""
    best = first_ranked(board)
    facts: dict[str, str | int | float] = {
        "n_partitions": len(board),
        "n_ranked": int(board["rank"].notna().sum()),
        "best": f"{best['chunk_config']} x {best['profile']}" if best is not None else "none ranked",
    }
    if best is not None:
        facts["best_span_iou"] = float(best["span_iou_mean"])
    facts["removed"] = ", ".join(pairs_where(board, is_removed)) or (
        "unknown: the config files could not be read" if board["removed"].isna().all() else "none"
    )
    facts["not_comparable"] = ", ".join(pairs_where(board, is_not_comparable)) or "none"
    return facts
