"""Token-level questions written by an LLM: it asks and quotes, we find the quotes in the source.

Per document (or section of a long one), and per pair of related documents for questions that need
both. Each quoted excerpt is located with exact offsets (exact match first, then a normalised match
mapped back to the original characters); a question with an excerpt that cannot be located is
rejected with the reason, never kept with a guessed span. Each question also comes with a short
reference answer written from its excerpts, for judging generated answers; a reply without one is
invalid and gets the repair prompt.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..corpus.corpus import Corpus
from ..llm.base import ChatMessage, CompletionParams
from ..llm.client import LLMClient
from ..llm.json_reply import InvalidReply
from ..progress import Progress, no_progress
from ..questions.datasets import TokenLevelExample
from ..types import CharacterSpan, Document, DocumentId, QuestionId, Rejection, sha256_hex
from .base import (
    GenerationResult,
    difficulty_of,
    example_metadata,
    question_items,
    question_of,
    reference_answer_of,
)
from .excerpts import explain_miss, locate_excerpt
from .terms import TermStatistics, content_terms

PROMPT_VERSION = "token-level-v2"  # v2: asks for a reference answer
GENERATOR = "llm-quoted-excerpts"

SYSTEM = (
    "You write evaluation questions for a search system over a company's documents. A good question "
    "is one a real employee would ask, is answered by the given text alone, and names no section "
    "headings or document ids. You always quote the exact sentences that answer the question, copied "
    "character for character from the document."
)

SCHEMA_HINT = (
    '{"questions": [{"question": "<a question ending in ?>", "difficulty": "easy|medium|hard", '
    '"excerpts": [{"doc_id": "<one of the document ids above>", "text": "<verbatim quote>"}], '
    '"reference_answer": "<one or two sentences answering the question from the excerpts alone>"}]}'
)


@dataclass(frozen=True)
class Section:
    """The part of a document one prompt shows: its offsets are kept, so quotes map back to the whole."""

    document: Document
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.document.text[self.start : self.end]


@dataclass(frozen=True)
class Proposal:
    question: str
    difficulty: str | None
    excerpts: tuple[tuple[DocumentId, str], ...]
    reference_answer: str


@dataclass(frozen=True)
class Task:
    """One prompt: a single section, or two sections of related documents (cross-document)."""

    sections: tuple[Section, ...]
    n_questions: int

    @property
    def doc_ids(self) -> tuple[DocumentId, ...]:
        return tuple(s.document.doc_id for s in self.sections)

    def messages(self) -> list[ChatMessage]:
        shown = "\n\n".join(
            f'<document id="{s.document.doc_id}">\n{s.text}\n</document>' for s in self.sections
        )
        if len(self.sections) > 1:
            ask = (
                f"Write {self.n_questions} question(s) that can only be answered by combining both "
                f"documents: quote at least one excerpt from each document."
            )
        else:
            ask = f"Write {self.n_questions} question(s) about the document, each on a different fact."
        return [
            ChatMessage("system", SYSTEM),
            ChatMessage(
                "user",
                f"{shown}\n\n{ask} For each question give 1 to 3 excerpts: whole sentences or phrases of "
                f"at least six words, copied exactly from the document text, that together answer it. "
                f"Also give a reference answer: one or two sentences that answer the question using only "
                f"what the excerpts say. Reply with only a JSON object:\n{SCHEMA_HINT}",
            ),
        ]

    def validate(self, obj: dict[str, Any]) -> list[Proposal]:
        proposals = []
        for where, item in question_items(obj):
            question = question_of(item, where)
            excerpts = item.get("excerpts")
            if not isinstance(excerpts, list) or not excerpts:
                raise InvalidReply(f"{where}.excerpts must be a non-empty list")
            pairs = []
            for j, excerpt in enumerate(excerpts):
                if not isinstance(excerpt, dict) or not isinstance(excerpt.get("text"), str):
                    raise InvalidReply(f'{where}.excerpts[{j}] must be {{"doc_id": ..., "text": ...}}')
                doc_id = excerpt.get("doc_id", self.doc_ids[0] if len(self.doc_ids) == 1 else None)
                if doc_id not in self.doc_ids:
                    raise InvalidReply(
                        f"{where}.excerpts[{j}].doc_id must be one of {', '.join(self.doc_ids)}, got {doc_id!r}"
                    )
                pairs.append((DocumentId(str(doc_id)), excerpt["text"]))
            proposals.append(
                Proposal(
                    question,
                    difficulty_of(item),
                    tuple(pairs),
                    reference_answer_of(item, where, "the excerpts"),
                )
            )
        return proposals


def sections(document: Document, max_chars: int) -> list[Section]:
    """The document whole, or cut at paragraph breaks into parts of at most ``max_chars``."""
    text = document.text
    if len(text) <= max_chars:
        return [Section(document, 0, len(text))]
    parts = []
    start = 0
    while start < len(text):
        end = min(len(text), start + max_chars)
        if end < len(text):
            cut = text.rfind("\n\n", start + max_chars // 2, end)
            end = cut + 2 if cut >= 0 else end
        parts.append(Section(document, start, end))
        start = end
    return parts


def related_pairs(corpus: Corpus, n_pairs: int) -> list[tuple[Document, Document]]:
    """The ``n_pairs`` most similar document pairs by tf-idf cosine, each document in one pair at most."""
    if n_pairs == 0 or len(corpus) < 2:
        return []
    documents = sorted(corpus, key=lambda d: d.doc_id)
    stats = TermStatistics.from_texts(d.text for d in documents)
    vectors = []
    for document in documents:
        counts = Counter(content_terms(document.text))
        weights = {t: c * stats.idf(t) for t, c in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors.append({t: w / norm for t, w in weights.items()})
    scored = []
    for i in range(len(documents)):
        for j in range(i + 1, len(documents)):
            small, large = sorted((vectors[i], vectors[j]), key=len)
            similarity = sum(w * large.get(t, 0.0) for t, w in small.items())
            scored.append((-similarity, documents[i].doc_id, documents[j].doc_id, i, j))
    pairs: list[tuple[Document, Document]] = []
    used: set[int] = set()
    for _, _, _, i, j in sorted(scored):
        if i in used or j in used:
            continue
        pairs.append((documents[i], documents[j]))
        used.update((i, j))
        if len(pairs) == n_pairs:
            break
    return pairs


def plan_tasks(
    corpus: Corpus, questions_per_document: int, cross_document_pairs: int, max_document_chars: int
) -> list[Task]:
    tasks = [
        Task((section,), questions_per_document)
        for document in sorted(corpus, key=lambda d: d.doc_id)
        for section in sections(document, max_document_chars)
    ]
    half = max(1, max_document_chars // 2)
    for first, second in related_pairs(corpus, cross_document_pairs):
        tasks.append(Task((sections(first, half)[0], sections(second, half)[0]), 1))
    return tasks


class LLMTokenLevelGenerator:
    def __init__(
        self,
        client: LLMClient,
        *,
        questions_per_document: int = 2,
        cross_document_pairs: int = 3,
        max_document_chars: int = 12_000,
        params: CompletionParams | None = None,
        repair_attempts: int = 1,
        documents: Collection[str] | None = None,
    ) -> None:
        self.client = client
        self.documents = None if documents is None else frozenset(documents)
        self.questions_per_document = questions_per_document
        self.cross_document_pairs = cross_document_pairs
        self.max_document_chars = max_document_chars
        self.params = params or CompletionParams(max_tokens=1024, json_mode=True)
        self.repair_attempts = repair_attempts

    def tasks(self, corpus: Corpus) -> list[Task]:
        """The prompts of a generation over the whole corpus; with ``documents``, those showing one of
        them (its sections, and the cross-document pairs it is in)."""
        tasks = plan_tasks(
            corpus, self.questions_per_document, self.cross_document_pairs, self.max_document_chars
        )
        if self.documents is None:
            return tasks
        return [t for t in tasks if self.documents & set(t.doc_ids)]

    def planned_requests(self, corpus: Corpus) -> list[tuple[list[ChatMessage], CompletionParams]]:
        """The first request of every task, for the cost estimate before anything is sent."""
        return [(task.messages(), self.params) for task in self.tasks(corpus)]

    def generate(
        self, corpus: Corpus, progress: Progress = no_progress
    ) -> GenerationResult[TokenLevelExample]:
        tasks = self.tasks(corpus)
        return GenerationResult.concat(self.client.map(self._run, tasks, progress, "question generation"))

    def _run(self, task: Task) -> GenerationResult[TokenLevelExample]:
        outcome = self.client.complete_json(
            task.messages(), self.params, task.validate, SCHEMA_HINT, self.repair_attempts
        )
        if outcome.value is None:
            rejection = Rejection(
                outcome.failure or "invalid_reply",
                outcome.error or "",
                task.doc_ids,
                metadata={"raw": outcome.raw},
            )
            return GenerationResult((), (rejection,))
        examples: list[TokenLevelExample] = []
        rejections: list[Rejection] = []
        documents = {s.document.doc_id: s for s in task.sections}
        for proposal in outcome.value:
            spans: list[CharacterSpan] = []
            missing = []
            for doc_id, excerpt in proposal.excerpts:
                section = documents[doc_id]
                match = locate_excerpt(doc_id, section.text, excerpt)
                if match is None:
                    missing.append(f"{doc_id}: {explain_miss(section.text, excerpt)}")
                    continue
                spans.extend(
                    CharacterSpan(doc_id, s.start + section.start, s.end + section.start, s.text)
                    for s in match.spans
                )
            if missing:
                rejections.append(
                    Rejection("excerpt_not_found", "; ".join(missing), task.doc_ids, proposal.question)
                )
                continue
            source = sorted({s.doc_id for s in spans})
            examples.append(
                TokenLevelExample(
                    QuestionId("llm-" + sha256_hex(proposal.question + repr(sorted(spans)))[:12]),
                    proposal.question,
                    tuple(sorted(spans)),
                    example_metadata(
                        GENERATOR,
                        self.client.model_id,
                        PROMPT_VERSION,
                        source,
                        "cross-document" if len(source) > 1 else "single-document",
                        proposal.difficulty,
                    ),
                    reference_answer=proposal.reference_answer,
                )
            )
        return GenerationResult(tuple(examples), tuple(rejections))
