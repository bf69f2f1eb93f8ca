"""How many questions each document is asked: the count follows the corpus, spread over its documents.

``token_level.n_questions: auto`` (the default, ``CountRule``) asks each document for

    ceil(sqrt(prose / prose_unit_chars)) questions, kept within [ceil(min_questions / D), max_questions // D]

where prose is the document's informative prose (the characters its candidate passages cover,
core/generation/passages.py; 0 gives no question) and D the number of documents. So every document with
prose gets at least one question (past ``max_questions`` documents, only the first ``max_questions`` in
a seeded order of their ids are asked, one each); a long document gets more, by the square root of its
prose, so it never crowds out the rest (100 times the prose, 10 times the questions); a corpus of few
documents still reaches ``min_questions`` when its passages allow; the total never passes
``max_questions``. The defaults (100, 500, 10,000 characters): 100 questions give a 95 % interval of
about +-0.08 on a span recall whose spread is 0.4, against +-0.15 with 30; 500 bound the retrieval work
and an LLM generator's bill. A number instead of ``auto`` is shared equally among the documents, as
before (a document without prose leaves its share unused).

A document's quota depends on its own prose and on D alone, never on another document's text: editing
a document changes its questions and no other's; adding or removing a document changes D and so may
move the others' shares, as it always did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..types import sha256_hex


@dataclass(frozen=True)
class CountRule:
    """``n_questions: auto``: the number of questions follows the corpus (see the module)."""

    min_questions: int = 100
    max_questions: int = 500
    prose_unit_chars: int = 10_000  # a document with up to this much prose is asked one question

    def __post_init__(self) -> None:
        if not 1 <= self.min_questions <= self.max_questions or self.prose_unit_chars < 1:
            raise ValueError(
                f"need 1 <= min_questions <= max_questions and prose_unit_chars >= 1, got "
                f"{self.min_questions}, {self.max_questions}, {self.prose_unit_chars}"
            )

    def share(self, prose_chars: int, documents_with_prose: int) -> int:
        """The questions asked of a document with ``prose_chars`` of prose, among ``documents_with_prose``."""
        if prose_chars <= 0:
            return 0
        most = max(1, self.max_questions // documents_with_prose)
        least = min(math.ceil(self.min_questions / documents_with_prose), most)
        return min(max(math.ceil(math.sqrt(prose_chars / self.prose_unit_chars)), least), most)


QuestionTarget = int | CountRule
AUTO = CountRule()  # n_questions: auto with the default parameters


@dataclass(frozen=True)
class QuestionCount:
    """How many questions a generation asks for, of which documents, and why (``describe``)."""

    rule: Literal["auto", "fixed", "per-section"]  # n_questions: auto, n_questions: N, the llm generator
    quotas: Mapping[str, int]  # doc id -> questions asked of it, every document (0: none)
    prose_chars: Mapping[str, int]  # doc id -> characters of informative prose (what can be asked about)
    how: str  # the rule in words, with its parameters
    cross_document: int = 0  # the llm generator: questions asked of two documents together
    # the questions the generator will be asked to write: fewer than ``total`` when documents hold fewer
    # passages than their share (None: not known before the LLM replies)
    planned: int | None = field(default=None)

    @property
    def total(self) -> int:
        return sum(self.quotas.values()) + self.cross_document

    @property
    def documents_with_prose(self) -> int:
        return sum(1 for chars in self.prose_chars.values() if chars > 0)

    @property
    def documents_asked(self) -> int:
        return sum(1 for quota in self.quotas.values() if quota > 0)

    def describe(self) -> str:
        """One line: ``160 questions (n_questions: auto, between 100 and 500): 1.47 M characters of prose
        in 155 documents, 118 with prose, 1 to 4 a document by the square root of its prose``."""
        prose = sum(self.prose_chars.values())
        documents = len(self.prose_chars)
        with_prose = self.documents_with_prose
        kind = "text" if self.rule == "per-section" else "prose"  # the llm generator reads it all
        text = (
            f"{self.total} questions ({self.how}): {characters(prose)} of {kind} in {documents} "
            f"document{'s' * (documents != 1)}, {with_prose} with {kind}"
        )
        asked = [quota for quota in self.quotas.values() if quota > 0]
        if asked and self.rule != "per-section":
            low, high = min(asked), max(asked)
            text += f", {low} a document" if low == high else f", {low} to {high} a document"
            text += " by the square root of its prose" if self.rule == "auto" and low != high else ""
        if with_prose > len(asked):
            text += f", {with_prose - len(asked)} without a question"
        if self.planned is not None and self.planned < sum(self.quotas.values()):
            text += f"; their passages give {self.planned} (some documents hold fewer than their share)"
        return text

    def as_metadata(self) -> dict[str, int | str]:
        metadata: dict[str, int | str] = {
            "question_count": self.describe(),
            "question_count_rule": self.rule,
            "questions_asked": self.total,
            "prose_characters": sum(self.prose_chars.values()),
            "documents_with_prose": self.documents_with_prose,
            "documents_asked": self.documents_asked,
        }
        if self.planned is not None:
            metadata["questions_planned"] = self.planned
        return metadata


def seeded_order(documents: Sequence[str], seed: int) -> list[str]:
    """The documents in an order drawn from their ids alone (sha256 of the seed and the id)."""
    return sorted(documents, key=lambda d: (sha256_hex(f"{seed}\0{d}"), d))


def document_quotas(documents: Sequence[str], n: int, seed: int) -> dict[str, int]:
    """How many of ``n`` questions each document is asked for: one each, round after round, in the
    ``seeded_order`` of their ids, so no document's quota depends on another's text. A document that
    cannot fill its quota leaves it unfilled rather than pass it on: another document's questions must
    not change when this one is edited."""
    order = seeded_order(documents, seed)
    if not order:
        return {}
    base, extra = divmod(max(n, 0), len(order))
    return {d: base + (1 if i < extra else 0) for i, d in enumerate(order)}


def question_quotas(prose_chars: Mapping[str, int], target: QuestionTarget, seed: int) -> QuestionCount:
    """The quotas of ``target`` (a number, or ``CountRule``) over the documents whose informative prose
    is ``prose_chars`` (doc id -> characters, every document; 0: nothing to ask about), in the seeded
    order of their ids (the order a generation lists its questions in). A document's quota depends on
    its own prose and the number of documents only."""
    order = seeded_order(list(prose_chars), seed)
    if isinstance(target, CountRule):
        # past max_questions documents, only the first max_questions of the order are asked
        quotas = {
            d: target.share(prose_chars[d], len(order)) if rank < target.max_questions else 0
            for rank, d in enumerate(order)
        }
        how = f"n_questions: auto, between {target.min_questions} and {target.max_questions}"
        rule: Literal["auto", "fixed"] = "auto"
    elif isinstance(target, int):
        shares = document_quotas(order, target, seed)
        quotas = {d: shares[d] if prose_chars[d] > 0 else 0 for d in order}
        unused = target - sum(quotas.values())
        how = f"n_questions: {target}" + (f", {unused} on documents without prose" if unused else "")
        rule = "fixed"
    else:
        raise TypeError(f"n_questions must be a number or a CountRule, got {target!r}")
    return QuestionCount(rule, quotas, dict(prose_chars), how)


def characters(n: int) -> str:
    """``1.47 M characters``, ``84.3 k characters``, ``950 characters``."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f} M characters"
    if n >= 10_000:
        return f"{n / 1000:.1f} k characters"
    return f"{n:,} characters"
