"""What every view of a ranked board shows (the terminal table, the asset's markdown, the HTML report):
the rank labels, each row's note, the footnotes, and the board's facts at a glance. ``ranking.py``
computes the board; this module only reads it, and assumes the current shape (a stored board written
before some column existed is upgraded when the warehouse reads it: core/store/table_upgrades.py).

Only rows that were measured the same way are ranked together (``ranking.py``). Every renderer shows the
others the same way, through ``rank_label``, ``row_note`` and ``footnotes``:

- **not comparable** (rank ``*``, not ranked): its chunk set covers other documents (``document_scope``:
  a chunk config applied to some documents only is evaluated on the questions about them,
  core/evaluation/document_scope.py), it was evaluated on other questions (``dataset_sha256``,
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
from collections.abc import Callable

import pandas as pd

from ..generation.sources import known_item_share
from ..metrics.names import SPAN_IOU
from ..metrics.reference_copies import RUN_DUPLICATION_COLUMNS, ReferenceDuplication
from .ranking import COMPARABILITY_COLUMNS, reference_questions, thresholds

NOT_COMPARABLE_MARK = "*"
EXCLUDED_LABEL = "x"
# Under a board whose questions are known-item queries (bags of a passage's salient terms).
KNOWN_ITEM_CAVEAT = (
    "bags of salient terms, which favour keyword retrieval): prefer an LLM generator or real questions "
    "to compare dense and keyword profiles"
)
REMOVED_LABEL = "-"


def is_removed(row: pd.Series) -> bool:
    return flag(row, "removed")


def flag(row: pd.Series, column: str) -> bool:
    """A boolean column of the row; False when unknown (``removed`` when the config files could not be
    read)."""
    value = row[column]
    return bool(value) if not pd.isna(value) else False


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
    if is_removed(row):
        return REMOVED_LABEL
    if any(flag(row, column) for column in COMPARABILITY_COLUMNS):
        return NOT_COMPARABLE_MARK
    return EXCLUDED_LABEL if is_excluded(row) else REMOVED_LABEL


def row_note(row: pd.Series) -> str:
    """What is special about the row ("" for most)."""
    return str(row["note"])


def profile_label(row: pd.Series) -> str:
    """The profile, marked when its current metrics come from a quick run (a sample of the questions)."""
    quick = row["evaluation_mode"] == "quick"
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
        constraint = str(board["rank_constraint"].iloc[0])
        lines.append(
            f"rank {EXCLUDED_LABEL}: not ranked, outside the objective's constraint ({constraint}: the "
            "leaderboard section of data/monitoring.yaml)"
        )
    if any(is_removed(r) for r in rows):
        lines.append(
            f"rank {REMOVED_LABEL}: removed, its chunk config or profile is no longer in the config files; "
            "listed with its history, not ranked"
        )
    if len(board) and board["removed"].isna().all():
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
        if board["other_mode"].astype(bool).any():
            parts.append(f"{same['evaluation_mode'].iloc[0]} runs")
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
