"""Tables written before some of their columns existed, brought to the current shape once, where the
warehouse reads them (``Warehouse.read_file``, ``read_runs``, ``read_history``): no reader downstream
handles an old shape.

One function per table kind. Each adds the columns today's writer writes that an older file lacks, with
the value that means what the old file meant, and leaves every column a file has as it is: a file in
the current shape reads back unchanged, so nothing a run writes changes. A column whose absence means
"unknown" gets a missing value (``<NA>``, NaN), never a made-up number.

- every table of runs (a ``run_id`` column; ``with_evaluation_defaults``): rows written before runs
  were tagged with their evaluation are an evaluation of their own (the id is the run id), in full mode;
- ``retrieval_metrics``: the provenance columns added over time (``RETRIEVAL_METRICS_DEFAULTS``) and the
  per-question duplication counts (unknown);
- ``answer_metrics``: the ``semantic_dynamic`` threshold the answers were judged with (unknown);
- ``leaderboard`` (a stored board): the ranking's flags, notes and objective columns
  (``LEADERBOARD_DEFAULTS``); a board written before the objective's constraints (no ``excluded``
  column) left unranked only the removed rows. A board written before the objective keeps no
  ``ranked_by``: that absence is what it is (ranked by span IoU, without tiers), and the
  recommendation says so rather than guess its objective.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import pandas as pd

from .metrics.reference_copies import DUPLICATION_COLUMNS, RUN_DUPLICATION_COLUMNS

# What a row without evaluation columns belongs to: its own run's evaluation, in this mode.
DEFAULT_MODE = "full"
# A column's value in a file written before it existed.
Default = str | int | float | bool

# retrieval_metrics: provenance columns a file written before them lacks, and what that meant.
RETRIEVAL_METRICS_DEFAULTS: Mapping[str, Default] = {
    "document_scope": "",  # the whole corpus: before a chunk config could cover some documents only
    "n_stale_questions": 0,  # before stale questions were counted, none was set aside
    "profile_version": "",
    "retrievers": "",
    "question_generators": "",  # unknown: the board says nothing about the questions' generator
    "experiment_url": "",  # no LangSmith experiment
}

# leaderboard: columns a stored board written before them lacks, and what that meant.
LEADERBOARD_DEFAULTS: Mapping[str, Default] = {
    "removed": False,
    "other_documents": False,
    "other_dataset": False,
    "other_mode": False,
    "other_question_set": False,
    "no_objective": False,
    "other_threshold": False,
    "excluded": False,
    "note": "",
    "ranked_by_note": "",
    "rank_constraint": "",
    "question_generators": "",
    "answer_threshold": float("nan"),  # no answers were judged on it
    "evaluation_mode": DEFAULT_MODE,  # before quick runs, every run was a full one
}


def with_evaluation_defaults(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of runs (a ``run_id`` column) with ``evaluation_id`` and ``evaluation_mode`` everywhere: a
    missing, null or empty id is the row's run id, a missing mode is full. Other frames unchanged."""
    if "run_id" not in frame.columns:
        return frame
    out = frame.copy()
    if "evaluation_id" in out.columns:
        out["evaluation_id"] = out["evaluation_id"].where(_given(out["evaluation_id"]), out["run_id"])
    else:
        out["evaluation_id"] = out["run_id"]
    if "evaluation_mode" in out.columns:
        out["evaluation_mode"] = out["evaluation_mode"].where(_given(out["evaluation_mode"]), DEFAULT_MODE)
    else:
        out["evaluation_mode"] = DEFAULT_MODE
    return out


def evaluation_defaults_sql(columns: Collection[str]) -> str:
    """The select list of a DuckDB view over history files whose union has ``columns``: every column,
    with the evaluation columns as ``with_evaluation_defaults`` makes them."""
    if "run_id" not in columns:
        return "*"
    replace, extra = [], []
    if "evaluation_id" in columns:
        replace.append("coalesce(nullif(CAST(evaluation_id AS VARCHAR), ''), run_id) AS evaluation_id")
    else:
        extra.append("run_id AS evaluation_id")
    if "evaluation_mode" in columns:
        replace.append(
            f"coalesce(nullif(CAST(evaluation_mode AS VARCHAR), ''), '{DEFAULT_MODE}') AS evaluation_mode"
        )
    else:
        extra.append(f"'{DEFAULT_MODE}' AS evaluation_mode")
    return "*" + (f" REPLACE ({', '.join(replace)})" if replace else "") + "".join(f", {e}" for e in extra)


def upgrade_retrieval_metrics(frame: pd.DataFrame) -> pd.DataFrame:
    """A partition's per-question retrieval metrics in the current shape (an empty table stays empty)."""
    if frame.columns.empty:
        return frame
    out = _with_defaults(with_evaluation_defaults(frame), RETRIEVAL_METRICS_DEFAULTS)
    for column in DUPLICATION_COLUMNS:  # not counted then: unknown, so no footnote on the board
        if column not in out.columns:
            out[column] = pd.Series(pd.NA, index=out.index, dtype="Int64")
    return out


def upgrade_answer_metrics(frame: pd.DataFrame) -> pd.DataFrame:
    """A partition's per-question answer metrics in the current shape (an empty table stays empty)."""
    if frame.columns.empty:
        return frame
    out = with_evaluation_defaults(frame)
    if "threshold" not in out.columns:  # judged before the threshold was recorded: unknown
        out = out.assign(threshold=float("nan"), threshold_how=pd.Series(None, index=out.index, dtype=object))
    return out


def upgrade_leaderboard(frame: pd.DataFrame) -> pd.DataFrame:
    """A stored leaderboard in the current shape of what its views read (view.py)."""
    if frame.columns.empty:
        return frame
    out = frame.copy()
    if "excluded" not in out.columns and "rank" in out.columns:
        # before the objective's constraints, a row without a rank was a removed one
        unranked = out["rank"].isna()
        known = (
            out["removed"].astype("boolean")
            if "removed" in out.columns
            else pd.Series(False, index=out.index)
        )
        out["removed"] = known.mask(unranked, True)
    out = _with_defaults(out, LEADERBOARD_DEFAULTS)
    for column in RUN_DUPLICATION_COLUMNS:  # not counted then: unknown, so no footnote
        if column not in out.columns:
            out[column] = pd.Series(pd.NA, index=out.index, dtype="Int64")
    return out


# The upgrade of each table kind read through the warehouse, by table name.
UPGRADES: Mapping[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "retrieval_metrics": upgrade_retrieval_metrics,
    "answer_metrics": upgrade_answer_metrics,
    "leaderboard": upgrade_leaderboard,
}


def upgraded(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as read from ``table``, in the table's current shape (other tables as they are)."""
    upgrade = UPGRADES.get(table)
    return upgrade(frame) if upgrade is not None else frame


def _with_defaults(frame: pd.DataFrame, defaults: Mapping[str, Default]) -> pd.DataFrame:
    missing = {column: value for column, value in defaults.items() if column not in frame.columns}
    return frame.assign(**missing) if missing else frame


def _given(column: pd.Series) -> pd.Series:
    return column.notna() & (column.astype("object") != "")
