"""Regenerating the synthetic questions of some documents and keeping the others'
(`rag-eval regenerate-questions --document DOC`).

What "keeping the others" means, exactly:
- every question (accepted or rejected) whose documents are all outside the selection stays as it was:
  same id, text, spans, metadata, and the run that generated it (``generated_run_id``); a question about
  a regenerated document and another one (a cross-document question) is regenerated with it;
- a kept question's spans must still match the corpus: if its document was edited since, it cannot be
  kept, and the regeneration is refused, naming the documents to regenerate too (or ``--all``);
- the new questions are the ones a full generation would ask about the selected documents (the
  generators plan over the whole corpus, then ask about those documents only), de-duplicated against
  the kept ones, and checked for retrievability against the whole corpus.
The table then holds the kept and the new questions as one dataset: ``eval_questions`` gets a new data
version only if the questions changed, and the evaluations that read it follow.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..corpus.corpus import Corpus
from ..errors import DatasetError
from ..questions.datasets import TokenLevelExample
from ..tables import ACCEPTED, questions_from_frame, records

# The run that generated a row's question (kept rows keep theirs; ``run_id`` is the table's writer).
GENERATED_RUN_ID = "generated_run_id"
# Columns a kept row takes from the new table: what describes the dataset as a whole.
_DATASET_COLUMNS = ("run_id", "created_at", "corpus_sha256", "dataset", "dataset_sha256", "answers_sha256")


@dataclass(frozen=True)
class KeptQuestions:
    """What a per-document regeneration keeps of the previous table."""

    examples: tuple[TokenLevelExample, ...]  # accepted questions of the other documents, in table order
    rows: pd.DataFrame  # every kept row, accepted and rejected, as it was
    replaced: int  # rows of the regenerated documents (accepted and rejected), replaced by new ones


def row_documents(row: Mapping[str, Any]) -> set[str]:
    """The documents a row of a generated table is about: its spans' and its source documents."""
    spans = row.get("relevant_spans")
    sources = row.get("source_doc_ids")
    found = {str(s["doc_id"]) for s in (spans if spans is not None else ())}
    found |= {str(d) for d in (sources if sources is not None else ())}
    if not found:  # a rejected row of a table written before source_doc_ids: its metadata says
        metadata = json.loads(str(row.get("metadata_json") or "{}"))
        found = {str(d) for d in metadata.get("source_doc_ids") or ()}
    return found


def questions_to_keep(previous: pd.DataFrame, corpus: Corpus, documents: Collection[str]) -> KeptQuestions:
    """The rows of ``previous`` (the synthetic_questions table) about none of ``documents``, their
    accepted questions checked against ``corpus``; a DatasetError naming the documents whose questions
    no longer match it."""
    selected = set(documents)
    keep = [not (row_documents(row) & selected) for row in records(previous)]
    rows = previous[keep].reset_index(drop=True)
    accepted = rows[rows["status"] == ACCEPTED] if "status" in rows.columns else rows
    examples = questions_from_frame(accepted).examples if len(accepted) else ()
    changed = sorted(
        {
            span.doc_id
            for example in examples
            for span in example.relevant_spans
            if span.doc_id not in corpus or corpus[span.doc_id].text[span.start : span.end] != span.text
        }
    )
    if changed:
        regenerate = " ".join(f"--document {d}" for d in changed)
        raise DatasetError(
            f"the synthetic questions of {', '.join(changed)} no longer match the corpus (edited or removed "
            f"since they were generated), so they cannot be kept: regenerate them too ({regenerate}), or "
            f"all of them (`rag-eval regenerate-questions --all`)"
        )
    return KeptQuestions(tuple(examples), rows, len(previous) - len(rows))


def with_kept_rows(new: pd.DataFrame, kept: KeptQuestions, run_id: str) -> pd.DataFrame:
    """The table a per-document regeneration writes: ``new`` (every accepted question, the kept ones
    included, and this generation's rejections, as the asset builds it) with the kept questions' own
    generator and generating run, and the kept rejected rows appended."""
    frame = new.copy()
    frame[GENERATED_RUN_ID] = run_id
    origin = _origin(kept.rows)
    accepted_kept = frame["status"].eq(ACCEPTED) & frame["question_id"].isin(
        [e.question_id for e in kept.examples]
    )
    for column in ("generator", GENERATED_RUN_ID):
        frame.loc[accepted_kept, column] = frame.loc[accepted_kept, "question_id"].map(origin[column])
    rejected = kept.rows[kept.rows["status"] != ACCEPTED].copy() if "status" in kept.rows.columns else None
    if rejected is None or rejected.empty:
        return frame
    rejected[GENERATED_RUN_ID] = _generated_by(rejected)
    first = frame.iloc[0] if len(frame) else None
    for column in _DATASET_COLUMNS:
        if first is not None and column in frame.columns:
            rejected[column] = first[column]
    return pd.concat([frame, rejected.reindex(columns=frame.columns)], ignore_index=True)


def _origin(rows: pd.DataFrame) -> pd.DataFrame:
    """Per accepted question id of the kept rows: its generator and the run that generated it."""
    accepted = rows[rows["status"] == ACCEPTED] if "status" in rows.columns else rows
    return pd.DataFrame(
        {
            "generator": accepted["generator"].astype(str).to_numpy(),
            GENERATED_RUN_ID: _generated_by(accepted),
        },
        index=accepted["question_id"].astype(str).to_numpy(),
    )


def _generated_by(rows: pd.DataFrame) -> list[str]:
    """Each row's generating run: its ``generated_run_id`` (core/store/table_upgrades.py gives a table from
    before per-document regeneration its writer's run id), else the run that wrote the row."""
    return [
        str(g) if isinstance(g, str) and g else str(r)
        for g, r in zip(rows[GENERATED_RUN_ID].tolist(), rows["run_id"].tolist(), strict=True)
    ]
