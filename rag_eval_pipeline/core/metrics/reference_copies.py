"""Where the text of a reference occurs in the corpus, for the copy-aware span metrics.

Corpora often hold duplicated passages (boilerplate, a paragraph pasted into two pages). A reference
points at one copy; a retriever that returns another copy found the same text. Finding copies by text
search is right here, unlike placing chunks (GUIDE section 2): we look for equal texts, not for where
a chunk was cut. Every occurrence counts, overlapping ones included ("aa" occurs 3 times in "aaaa").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..spans import Interval, Merged
from ..types import DocumentId

__all__ = [
    "DUPLICATION_COLUMNS",
    "RUN_DUPLICATION_COLUMNS",
    "DocumentLike",
    "ReferenceCopies",
    "ReferenceDuplication",
    "TextCopy",
]

# The per-question columns of retrieval_metrics that say how much of a question's reference text is
# duplicated (counts, not metrics: they are never averaged).
DUPLICATION_COLUMNS = ("duplicated_references", "extra_reference_copies")
# The same counts summed over a run: the retrieval_metrics asset's metadata, its summary row in history,
# the leaderboard's columns (``ReferenceDuplication`` fields ``questions``, ``references``, ``extra_copies``).
RUN_DUPLICATION_COLUMNS = (
    "questions_with_duplicated_references",
    "duplicated_references",
    "extra_reference_copies",
)


class DocumentLike(Protocol):
    """Anything with an id and its text: ``Document``, test doubles."""

    @property
    def doc_id(self) -> DocumentId: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True, order=True)
class TextCopy:
    """One occurrence of a text: it starts at ``start`` of ``doc_id`` (its end is start + the length)."""

    doc_id: DocumentId
    start: int


@dataclass(frozen=True)
class ReferenceDuplication:
    """How much reference text also occurs elsewhere: for one question, or summed over a run.

    ``questions``: questions with at least one duplicated reference (0 or 1 for one question);
    ``references``: merged references whose text occurs more than once in the corpus;
    ``extra_copies``: occurrences beyond the references themselves.
    """

    questions: int = 0
    references: int = 0
    extra_copies: int = 0

    def __add__(self, other: ReferenceDuplication) -> ReferenceDuplication:
        return ReferenceDuplication(
            self.questions + other.questions,
            self.references + other.references,
            self.extra_copies + other.extra_copies,
        )

    def columns(self) -> dict[str, int]:
        """One question's ``DUPLICATION_COLUMNS``."""
        return dict(zip(DUPLICATION_COLUMNS, (self.references, self.extra_copies), strict=True))

    def run_columns(self) -> dict[str, int]:
        """A run's ``RUN_DUPLICATION_COLUMNS``."""
        values = (self.questions, self.references, self.extra_copies)
        return dict(zip(RUN_DUPLICATION_COLUMNS, values, strict=True))

    @classmethod
    def of_questions(cls, duplicated: Iterable[int], extra_copies: Iterable[int]) -> ReferenceDuplication:
        """The run's counts from its per-question ``DUPLICATION_COLUMNS``."""
        per_question = [int(n) for n in duplicated]
        return cls(
            sum(1 for n in per_question if n > 0), sum(per_question), sum(int(n) for n in extra_copies)
        )

    def describe(self, n_questions: int) -> str:
        """The warning the asset, the leaderboard and the report show ("" when nothing is duplicated)."""
        if not self.references:
            return ""
        return (
            f"duplicated reference text: {self.questions} of {n_questions} question"
            f"{'s' * (n_questions != 1)} {'has' if self.questions == 1 else 'have'} references whose text "
            "occurs elsewhere in the corpus too "
            f"({self.references} reference{'s' * (self.references != 1)}, {self.extra_copies} extra "
            f"cop{'ies' if self.extra_copies != 1 else 'y'}): the position-exact span metrics score a "
            "retrieved copy 0, the span_*_copies metrics count it"
        )


class ReferenceCopies:
    """Every occurrence of each reference text in a corpus, searched once per distinct text.

    Build one per corpus and dataset (``token_level_result`` builds one per call): what it finds does not
    depend on the chunk config, so every question and metric reuses it.
    """

    def __init__(self, documents: Iterable[DocumentLike]) -> None:
        self._texts: dict[DocumentId, str] = {d.doc_id: d.text for d in documents}
        self._order = sorted(self._texts)
        self._found: dict[str, tuple[TextCopy, ...]] = {}

    def of(self, doc_id: DocumentId, start: int, end: int) -> tuple[TextCopy, ...]:
        """The occurrences of ``text[start:end]`` of ``doc_id`` (that one included), sorted."""
        text = self._texts.get(doc_id)
        if text is None:
            raise KeyError(f"reference document {doc_id!r} is not in the corpus the copies are searched in")
        if not 0 <= start < end <= len(text):
            raise ValueError(f"reference {doc_id}[{start}:{end}] is empty or outside its document")
        return self.occurrences(text[start:end])

    def occurrences(self, needle: str) -> tuple[TextCopy, ...]:
        """Where ``needle`` occurs in the corpus, overlapping occurrences included, sorted."""
        found = self._found.get(needle)
        if found is None:
            copies = []
            for doc_id in self._order:
                text = self._texts[doc_id]
                at = text.find(needle)
                while at >= 0:
                    copies.append(TextCopy(doc_id, at))
                    at = text.find(needle, at + 1)
            found = self._found[needle] = tuple(copies)
        return found

    def of_merged(
        self, merged: Mapping[DocumentId, list[Interval]]
    ) -> dict[tuple[DocumentId, Interval], tuple[TextCopy, ...]]:
        """The occurrences of every interval of a merged span set, keyed by (document, interval)."""
        return {
            (doc_id, iv): self.of(doc_id, *iv) for doc_id, intervals in merged.items() for iv in intervals
        }

    def duplication(self, merged: Merged) -> ReferenceDuplication:
        """How many of one question's merged references have copies, and how many extra copies."""
        counts = [len(c) - 1 for c in self.of_merged(merged).values()]
        duplicated = sum(1 for extra in counts if extra > 0)
        return ReferenceDuplication(int(duplicated > 0), duplicated, sum(counts))
