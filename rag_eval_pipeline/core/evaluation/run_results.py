"""The per-question results of an evaluation, filtered and paged (`rag-eval results REF`, the tech spec's
``GET /eval/runs/{id}/results?limit&offset&question_type&config_profile_id``).

The rows are the ``retrieval_metrics`` history its runs wrote (one row per question and partition);
each row carries its question's type (rows written before they did get it from the current questions).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from ..errors import ConfigError
from ..metrics.names import CONTEXT_TOKENS, HEADLINE_METRICS, QUERY_COUNT, SPAN_RECALL, budget_metric_name
from ..questions.question_catalog import UNSPECIFIED

# What a result row shows: the pair, the question, the headline metrics, the objective's default metric
# and the context size (when the rows have them), then the run.
RESULT_METRICS = (*HEADLINE_METRICS, budget_metric_name(SPAN_RECALL, 1000), CONTEXT_TOKENS)


@dataclass(frozen=True)
class ResultsPage:
    rows: pd.DataFrame
    total: int  # rows matching the filters, before paging
    offset: int
    limit: int

    def describe(self) -> str:
        if not self.total:
            return "no result matches"
        if self.rows.empty:
            return f"no row at offset {self.offset}: {self.total} rows match"
        last = self.offset + len(self.rows)
        more = f"; --offset {last} for the next page" if last < self.total else ""
        return f"rows {self.offset + 1}-{last} of {self.total}{more}"


def results_page(
    frame: pd.DataFrame,
    *,
    question_types: Collection[str] = (),
    profiles: Collection[str] = (),
    chunk_configs: Collection[str] = (),
    limit: int = 50,
    offset: int = 0,
    types_of: Mapping[str, str] | None = None,
    what: str = "the evaluation",
) -> ResultsPage:
    """The rows of the partitions and question types asked for, sorted by chunk config, profile and
    question, from ``offset``, at most ``limit``. A value no row has is an error naming what there is
    (``what``: the evaluation or run the rows are of)."""
    if limit < 1 or offset < 0:
        raise ConfigError(f"--limit must be >= 1 and --offset >= 0, got {limit} and {offset}")
    rows = with_question_types(frame, types_of or {})
    for column, wanted, option in (
        ("chunk_config", chunk_configs, "--chunk-config"),
        ("profile", profiles, "--profile"),
    ):
        _check_values(rows, column, wanted, option, what)
    if question_types:
        present = {str(t).lower(): str(t) for t in rows["question_type"].unique()}
        unknown = [t for t in question_types if t.lower() not in present]
        if unknown:
            raise ConfigError(
                f"--question-type {', '.join(unknown)}: {what} has no question of that type; its types: "
                f"{', '.join(sorted(present.values())) or 'none'}"
            )
        rows = rows[rows["question_type"].str.lower().isin({t.lower() for t in question_types})]
    if chunk_configs:
        rows = rows[rows["chunk_config"].isin(chunk_configs)]
    if profiles:
        rows = rows[rows["profile"].isin(profiles)]
    rows = rows.sort_values(["chunk_config", "profile", "question_id"], kind="stable")
    columns = [
        "chunk_config",
        "profile",
        "question_id",
        "question_type",
        QUERY_COUNT,  # how often users asked it: only in a set weighted by traffic
        *(m for m in RESULT_METRICS if m in rows.columns),
        "evaluation_mode",
        "run_id",
    ]
    page = rows[[c for c in columns if c in rows.columns]].iloc[offset : offset + limit]
    return ResultsPage(page.reset_index(drop=True), len(rows), offset, limit)


def with_question_types(frame: pd.DataFrame, types_of: Mapping[str, str]) -> pd.DataFrame:
    """The rows with ``question_type`` everywhere: their own, else ``types_of`` by question id."""
    rows = frame.copy()
    known = rows["question_type"] if "question_type" in rows.columns else pd.Series(None, index=rows.index)
    looked_up = rows["question_id"].astype(str).map(lambda q: types_of.get(q, UNSPECIFIED))
    rows["question_type"] = known.where(known.notna() & (known.astype(str) != ""), looked_up).astype(str)
    return rows


def _check_values(
    rows: pd.DataFrame, column: str, wanted: Sequence[str] | Collection[str], option: str, what: str
) -> None:
    present = sorted({str(v) for v in rows[column].unique()}) if column in rows.columns else []
    unknown = [w for w in wanted if w not in present]
    if unknown:
        raise ConfigError(
            f"{option} {', '.join(unknown)}: {what} did not evaluate it; it evaluated: {', '.join(present)}"
        )
