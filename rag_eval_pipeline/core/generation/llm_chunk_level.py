"""Chunk-level questions (the seed tech spec): classify each sampled chunk's information density, skip
SPARSE ones, and ask for FACTUAL / REASONING / MULTI_HOP questions with 3-5 expected keywords, a short
reference answer and the ids of the chunks that answer them. MULTI_HOP questions see the chunk and its
successor.

The keywords are asked for as words a correct answer must contain, copied from the chunks. They become
the example's ``expected_keywords`` only where they are such facts by a check we can make: a keyword
that does not occur in its source chunks is not grounded there, and one the question itself states
proves nothing about an answer that repeats the question. ``metadata.keywords`` keeps them all."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..llm.base import ChatMessage, CompletionParams
from ..llm.client import LLMClient
from ..llm.json_reply import InvalidReply
from ..progress import Progress, no_progress
from ..questions.datasets import ChunkLevelExample
from ..types import ChunkId, PositionAwareChunk, QuestionId, Rejection, sha256_hex
from .base import (
    GenerationResult,
    difficulty_of,
    example_metadata,
    question_items,
    question_of,
    reference_answer_of,
)
from .excerpts import normalise, normalise_excerpt

PROMPT_VERSION = "chunk-level-v2"  # v2: asks for a reference answer; keywords copied from the chunks
GENERATOR = "llm-chunk-level"
Density = Literal["DENSE", "MODERATE", "SPARSE"]
DENSITIES: tuple[Density, ...] = ("DENSE", "MODERATE", "SPARSE")
QUESTION_TYPES = ("FACTUAL", "REASONING", "MULTI_HOP")
LABELS = ("A", "B")  # chunk ids are long hashes a model may mangle: it sees short labels instead

CLASSIFY_HINT = '{"density": "DENSE|MODERATE|SPARSE", "reason": "<a few words>"}'
GENERATE_HINT = (
    '{"questions": [{"question": "<ends with ?>", "type": "FACTUAL|REASONING|MULTI_HOP", '
    '"keywords": ["<3 to 5 words or short phrases from the chunks that a correct answer must contain>"], '
    '"reference_answer": "<one or two sentences answering the question from the chunks alone>", '
    '"source_chunks": ["A"], "difficulty": "easy|medium|hard"}]}'
)


@dataclass(frozen=True)
class ChunkTask:
    chunk: PositionAwareChunk
    neighbour: PositionAwareChunk | None  # the next chunk of the same document, for MULTI_HOP

    def classify_messages(self) -> list[ChatMessage]:
        return [
            ChatMessage("system", "You judge how much retrievable information a text chunk holds."),
            ChatMessage(
                "user",
                f"Chunk:\n{self.chunk.text}\n\nClassify its information density: DENSE (several specific "
                f"facts such as names, numbers, rules or steps), MODERATE (one or two facts) or SPARSE "
                f"(headings, boilerplate, navigation; almost no facts). Reply with only a JSON object:\n"
                f"{CLASSIFY_HINT}",
            ),
        ]

    def generate_messages(self, density: Density, questions_per_chunk: int) -> list[ChatMessage]:
        n = questions_per_chunk if density == "DENSE" else 1
        shown = f'<chunk id="A">\n{self.chunk.text}\n</chunk>'
        multi = ""
        if self.neighbour is not None:
            shown += f'\n\n<chunk id="B">\n{self.neighbour.text}\n</chunk>'
            multi = (
                " You may make one of them a MULTI_HOP question that needs both chunk A and chunk B "
                '(source_chunks ["A", "B"]).'
            )
        return [
            ChatMessage(
                "system",
                "You write evaluation questions for a search system. Questions must be answerable from "
                "the given chunks alone and must not mention chunks, ids or headings.",
            ),
            ChatMessage(
                "user",
                f"{shown}\n\nWrite {n} question(s) answered by chunk A.{multi} Tag each question FACTUAL "
                f"(one stated fact), REASONING (needs inference from the text) or MULTI_HOP. Give 3 to 5 "
                f"keywords a correct answer must contain (names, numbers, terms copied from the chunks), "
                f"a reference answer (one or two sentences that answer the question using only what the "
                f"chunks say) and the chunks that answer it. Reply with only a JSON object:\n"
                f"{GENERATE_HINT}",
            ),
        ]

    def chunk_for(self, label: str) -> PositionAwareChunk:
        if label == "A":
            return self.chunk
        if label == "B" and self.neighbour is not None:
            return self.neighbour
        raise InvalidReply(f"unknown chunk {label!r}: use {', '.join(LABELS[: 2 if self.neighbour else 1])}")


def parse_density(obj: dict[str, Any]) -> Density:
    density = str(obj.get("density", "")).strip().upper()
    for known in DENSITIES:
        if density == known:
            return known
    raise InvalidReply(f'"density" must be DENSE, MODERATE or SPARSE, got {obj.get("density")!r}')


@dataclass(frozen=True)
class ProposedQuestion:
    question: str
    question_type: str
    keywords: tuple[str, ...]
    labels: tuple[str, ...]
    difficulty: str | None
    reference_answer: str


def parse_questions(task: ChunkTask, obj: dict[str, Any]) -> list[ProposedQuestion]:
    proposals = []
    for where, item in question_items(obj):
        question = question_of(item, where)
        kind = str(item.get("type", "")).strip().upper().replace("-", "_")
        if kind not in QUESTION_TYPES:
            raise InvalidReply(f"{where}.type must be FACTUAL, REASONING or MULTI_HOP")
        keywords = item.get("keywords")
        if not isinstance(keywords, list) or not all(isinstance(k, str) and k.strip() for k in keywords):
            raise InvalidReply(f"{where}.keywords must be a list of strings")
        if len(keywords) < 3:
            raise InvalidReply(f"{where}.keywords must hold 3 to 5 keywords, got {len(keywords)}")
        labels = item.get("source_chunks", ["A"])
        if not isinstance(labels, list) or not labels:
            raise InvalidReply(f"{where}.source_chunks must be a non-empty list of chunk labels")
        labels = sorted({str(label).strip() for label in labels})
        for label in labels:
            task.chunk_for(label)
        if kind == "MULTI_HOP" and len(labels) < 2:
            raise InvalidReply(f'{where}: a MULTI_HOP question needs source_chunks ["A", "B"]')
        proposals.append(
            ProposedQuestion(
                question,
                kind,
                tuple(k.strip() for k in keywords[:5]),
                tuple(labels),
                difficulty_of(item),
                reference_answer_of(item, where, "the chunks"),
            )
        )
    return proposals


def expected_keywords(
    keywords: Sequence[str], question: str, sources: Sequence[PositionAwareChunk]
) -> tuple[str, ...]:
    """The keywords that are facts a correct answer must contain: each occurs, as whole words, in the
    source chunks and not in the question (compared normalised: case, accents, quotes, whitespace)."""
    chunk_text = normalise("\n".join(c.text for c in sources)).text
    asked = normalise(question).text
    kept: list[str] = []
    for keyword in keywords:
        needle = normalise_excerpt(keyword)
        if not needle or needle in (normalise_excerpt(k) for k in kept):
            continue
        whole = re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)")
        if whole.search(chunk_text) and not whole.search(asked):
            kept.append(keyword)
    return tuple(kept)


def sample_tasks(chunks: Sequence[PositionAwareChunk], max_chunks: int, seed: int) -> list[ChunkTask]:
    """A seeded sample of chunks (the same settings give the same sample), each with its successor, in
    document order: the ``max_chunks`` chunks with the smallest sha256 of (seed, chunk id). A chunk's
    key depends on it alone (its id hashes its document, text and occurrence), so editing one document
    leaves every other chunk's key as it was: the sample of other documents changes only where the
    edited document's new keys push one out of (or let one into) the sample, not wholesale as an index
    shift did."""
    ordered = sorted(chunks, key=lambda c: (c.doc_id, c.start, c.chunk_id))
    following: dict[ChunkId, PositionAwareChunk | None] = {}
    for current, nxt in zip(ordered, [*ordered[1:], None], strict=True):
        following[current.chunk_id] = nxt if nxt is not None and nxt.doc_id == current.doc_id else None
    keyed = sorted(range(len(ordered)), key=lambda i: (sha256_hex(f"{seed}\0{ordered[i].chunk_id}"), i))
    chosen = sorted(keyed[: max(max_chunks, 0)])
    return [ChunkTask(ordered[i], following[ordered[i].chunk_id]) for i in chosen]


class LLMChunkLevelGenerator:
    def __init__(
        self,
        client: LLMClient,
        *,
        max_chunks: int = 30,
        questions_per_chunk: int = 2,
        seed: int = 13,
        params: CompletionParams | None = None,
        repair_attempts: int = 1,
    ) -> None:
        self.client = client
        self.max_chunks = max_chunks
        self.questions_per_chunk = questions_per_chunk
        self.seed = seed
        self.classify_params = CompletionParams(max_tokens=80, json_mode=True)
        self.params = params or CompletionParams(max_tokens=700, json_mode=True)
        self.repair_attempts = repair_attempts

    def tasks(self, chunks: Sequence[PositionAwareChunk]) -> list[ChunkTask]:
        return sample_tasks(chunks, self.max_chunks, self.seed)

    def planned_requests(
        self, chunks: Sequence[PositionAwareChunk]
    ) -> list[tuple[list[ChatMessage], CompletionParams]]:
        """Classification of every sampled chunk, and generation as if every chunk were DENSE."""
        requests = []
        for task in self.tasks(chunks):
            requests.append((task.classify_messages(), self.classify_params))
            requests.append((task.generate_messages("DENSE", self.questions_per_chunk), self.params))
        return requests

    def generate(
        self, chunks: Sequence[PositionAwareChunk], progress: Progress = no_progress
    ) -> GenerationResult[ChunkLevelExample]:
        return GenerationResult.concat(
            self.client.map(self._run, self.tasks(chunks), progress, "chunk-level generation")
        )

    def _rejection(self, task: ChunkTask, failure: Any, error: str | None, raw: str | None) -> Rejection:
        return Rejection(
            failure or "invalid_reply",
            error or "",
            (task.chunk.doc_id,),
            source_chunk_ids=(task.chunk.chunk_id,),
            metadata={"raw": raw},
        )

    def _run(self, task: ChunkTask) -> GenerationResult[ChunkLevelExample]:
        density = self.client.complete_json(
            task.classify_messages(), self.classify_params, parse_density, CLASSIFY_HINT, self.repair_attempts
        )
        if density.value is None:
            return GenerationResult((), (self._rejection(task, density.failure, density.error, density.raw),))
        if density.value == "SPARSE":
            rejection = Rejection(
                "sparse_chunk",
                "classified SPARSE: too little information to ask about",
                (task.chunk.doc_id,),
                source_chunk_ids=(task.chunk.chunk_id,),
            )
            return GenerationResult((), (rejection,))
        outcome = self.client.complete_json(
            task.generate_messages(density.value, self.questions_per_chunk),
            self.params,
            lambda obj: parse_questions(task, obj),
            GENERATE_HINT,
            self.repair_attempts,
        )
        if outcome.value is None:
            return GenerationResult((), (self._rejection(task, outcome.failure, outcome.error, outcome.raw),))
        examples = []
        for proposal in outcome.value:
            sources = [task.chunk_for(label) for label in proposal.labels]
            chunk_ids = tuple(c.chunk_id for c in sources)
            examples.append(
                ChunkLevelExample(
                    QuestionId("cl-" + sha256_hex(proposal.question + "\0" + "\0".join(chunk_ids))[:12]),
                    proposal.question,
                    chunk_ids,
                    example_metadata(
                        GENERATOR,
                        self.client.model_id,
                        PROMPT_VERSION,
                        sorted({c.doc_id for c in sources}),
                        proposal.question_type,
                        proposal.difficulty,
                        keywords=list(proposal.keywords),
                        source_chunk_ids=list(chunk_ids),
                        density=density.value,
                    ),
                    reference_answer=proposal.reference_answer,
                    expected_keywords=expected_keywords(proposal.keywords, proposal.question, sources),
                )
            )
        return GenerationResult(tuple(examples))
