"""Whether two measurements of a setup were made alike, and if not, what differs, in words.

One rule wherever numbers meet: the leaderboard ranks only the rows measured like its reference rows
(leaderboard/ranking.py picks the reference), the report's trends and `rag-eval history` break a
partition's line where a run was not measured like the run before it, and `rag-eval compare` says when A
and B were not. A measurement's ``Basis``:

- the documents its chunk set covers (``document_scope``: "" for the whole corpus, core/evaluation/document_scope.py);
- the questions (``dataset_sha256``: another dataset, e.g. after a deleted document made questions stale);
- the mode (a quick run on a sample of the questions vs full runs);
- the sample of the questions (``question_set``, a hash of the question ids; of a row written before it
  existed, a different number of questions is a different sample).

The first of these that differs is the difference (a chunk set over other documents is evaluated on
other questions too: naming both would say one thing twice). A value not known (a row written before its
column existed) never differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from ..types import sha256_hex
from .document_scope import WHOLE_CORPUS

Aspect = Literal["documents", "dataset", "mode", "question_set"]
# The columns a basis is read from: history summaries, leaderboard rows and per-question rows have them.
BASIS_COLUMNS = ("document_scope", "dataset_sha256", "evaluation_mode", "question_set", "n_questions")


def question_set(frame: pd.DataFrame) -> str:
    """Which questions a run was evaluated on (a quick run's sample, or all of them), from its
    per-question rows: a hash of their ids."""
    ids = sorted(str(q) for q in frame["question_id"]) if "question_id" in frame.columns else []
    return sha256_hex("\n".join(ids))[:16]


@dataclass(frozen=True)
class Basis:
    """What a measurement was made on (None: not known)."""

    documents: str | None = WHOLE_CORPUS
    dataset: str | None = None
    mode: str | None = None
    question_set: str | None = None
    n_questions: int | None = None

    @classmethod
    def of(cls, row: Mapping[str, object]) -> Basis:
        """The basis a row states: a summary or leaderboard row, or any per-question row of a run (then
        without its question set: ``of_questions``). A row written before scopes covers the whole corpus."""
        return cls(
            _text(row.get("document_scope")) or WHOLE_CORPUS,
            _text(row.get("dataset_sha256")),
            _text(row.get("evaluation_mode")),
            _text(row.get("question_set")),
            _count(row.get("n_questions")),
        )

    @classmethod
    def of_questions(cls, frame: pd.DataFrame) -> Basis:
        """The basis of one run from its per-question rows (not empty)."""
        first: dict[str, object] = {str(k): v for k, v in frame.iloc[0].items()}
        first.update(question_set=question_set(frame), n_questions=len(frame))
        return cls.of(first)

    def first_difference(self, reference: Basis) -> Aspect | None:
        """What this measurement does not share with ``reference``, the first in the module's order."""
        if _differ(self.documents, reference.documents):
            return "documents"
        if _differ(self.dataset, reference.dataset):
            return "dataset"
        if _differ(self.mode, reference.mode):
            return "mode"
        if self.question_set is not None and reference.question_set is not None:
            return "question_set" if self.question_set != reference.question_set else None
        return "question_set" if _differ(self.n_questions, reference.n_questions) else None

    def difference(self, reference: Basis) -> str:
        """How this measurement differs from ``reference``, in the leaderboard's words (``other
        questions: 8 vs 30``); "" when it was made alike."""
        aspect = self.first_difference(reference)
        return self.describe(aspect, reference) if aspect is not None else ""

    def describe(self, aspect: Aspect, reference: Basis) -> str:
        """``aspect`` of this measurement against ``reference``'s, in words."""
        n = self.n_questions
        if aspect == "documents":
            return f"other documents: {scope_label(self.documents)} vs {scope_label(reference.documents)}"
        if aspect == "dataset":
            reference_n = reference.n_questions if reference.mode != "quick" else None
            if reference_n is not None and self.mode != "quick" and n is not None and n != reference_n:
                return f"other questions: {n} vs {reference_n}"
            return f"other questions: dataset {str(self.dataset)[:8]} vs {str(reference.dataset)[:8]}"
        if aspect == "mode":
            on = f" on {n} questions" if n is not None else ""
            return f"{self.mode} run{on} vs {reference.mode} runs"
        if self.question_set is not None and reference.question_set is not None:
            return f"other question sample: set {self.question_set[:8]} vs {reference.question_set[:8]}"
        return f"other question sample: {n} vs {reference.n_questions} questions"


def scope_label(scope: object) -> str:
    """A ``document_scope`` as the notes say it: "the whole corpus", or "chunk set of 3 documents ..."."""
    return (
        "the whole corpus" if not isinstance(scope, str) or scope == WHOLE_CORPUS else f"chunk set of {scope}"
    )


def series_breaks(frame: pd.DataFrame) -> list[str]:
    """For runs of one partition in time order (rows with ``BASIS_COLUMNS`` where known): per run, how it
    differs from the run before it ("" for the first and for every run made alike), so a trend line is
    drawn only through runs measured alike."""
    notes: list[str] = []
    before: Basis | None = None
    for row in frame.to_dict("records"):
        basis = Basis.of({str(k): v for k, v in row.items()})
        notes.append(basis.difference(before) if before is not None else "")
        before = basis
    return notes


def _known(value: object) -> object | None:
    """The value, or None where it is missing (None, NaN, <NA>) or empty."""
    if isinstance(value, str):
        return value or None
    return None if value is None or bool(pd.isna(pd.Series([value], dtype="object")).iloc[0]) else value


def _text(value: object) -> str | None:
    known = _known(value)
    return str(known) if known is not None else None


def _count(value: object) -> int | None:
    number = pd.to_numeric(pd.Series([_known(value)], dtype="object"), errors="coerce").iloc[0]
    return None if pd.isna(number) else int(number)


def _differ(value: object | None, reference: object | None) -> bool:
    return value is not None and reference is not None and value != reference
