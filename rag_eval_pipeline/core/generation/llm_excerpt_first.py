"""Excerpt-first questions: informative passages are chosen first (offsets known by construction), then
the LLM writes one question each passage answers. Nothing has to be located afterwards, which is what
makes this mode work with small local models that cannot quote reliably.

The model is also asked for the answer, on a line of its own after an ``Answer:`` label. Tiny models
often leave it out or write something unusable (a placeholder, another question), so the answer is
optional: the question is kept either way, with ``reference_answer`` None and the reason in
``metadata.reference_answer_missing``."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..corpus.corpus import Corpus
from ..llm.base import ChatMessage, CompletionParams
from ..llm.client import LLMClient
from ..llm.json_reply import InvalidReply
from ..progress import Progress, no_progress
from ..questions.datasets import TokenLevelExample
from ..types import QuestionId, Rejection, sha256_hex
from .base import MAX_ANSWER_CHARS, GenerationResult, example_metadata, has_few_words
from .passages import Passage, select_passages
from .quotas import AUTO, QuestionTarget

PROMPT_VERSION = "excerpt-first-v3"  # v3: asks for the answer too
GENERATOR = "llm-excerpt-first"

# On SmolLM2-135M, "reply with the question only" and a plainer wording gave the most usable questions,
# and JSON replies failed (0 of 8), so the reply is plain text. Asking for the answer as well (8 passages):
# a reply template with placeholders kept the questions as usable and gave 2 answers that parse (not
# always correct ones); a worked example instead was copied verbatim into most replies.
SYSTEM = (
    "You write quiz questions. The answer to your question must be stated in the passage. "
    "Reply with the question, then the answer."
)
# Questions about the prompt rather than the passage's content: a small model's favourite escape.
_META = re.compile(r"\b(?:passage|this question|answer to)\b", re.IGNORECASE)
SCHEMA_HINT = "one line: a question that ends with '?', then a line 'Answer: <its answer from the passage>'"

_PREFIX = re.compile(r"^\s*(?:[-*\d.)\s]*)(?:(?:question|q)\s*\d*\s*[:.-]\s*)?", re.IGNORECASE)
# "Answer:" anywhere, or "A:" opening a line, before the next "Question:" (whose answer it would be); the
# answer runs to a blank line.
_ANSWER_LABEL = re.compile(r"\banswer\s*[:\uff1a]|^\s*a\s*[:\uff1a]", re.IGNORECASE | re.MULTILINE)
_NEXT_QUESTION = re.compile(r"\n\s*(?:question|q)\s*\d*\s*[:\uff1a.)-]", re.IGNORECASE)
_BLANK_LINE = re.compile(r"\n\s*\n")
_FILLER = re.compile(r"^(?:the\s+answer\s+is\b\s*[:,-]?\s*)+", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"^[\[<({].*[\]>)}]$")


@dataclass(frozen=True)
class QuestionReply:
    """A parsed reply: the question, and its answer or why there is none (``answer_missing``)."""

    question: str
    reference_answer: str | None
    answer_missing: str | None = None


def parse_reply(raw: str) -> QuestionReply:
    """A JSON ``{"question": ..., "answer": ...}`` or plain text: the question is the first line that
    asks something (``InvalidReply`` without one); the answer follows an ``Answer:`` label. A missing or
    unusable answer does not invalidate the reply."""
    text = raw.strip()
    answer: str | None = None
    from_json = False
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("question"), str):
            text = value["question"]
            given = value.get("reference_answer", value.get("answer"))
            answer = given if isinstance(given, str) else None
            from_json = True
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        cleaned = _PREFIX.sub("", line).strip().strip('"').strip()
        if "?" not in cleaned:
            continue
        question = cleaned[: cleaned.index("?") + 1].strip()
        if has_few_words(question):
            raise InvalidReply(f"the question {question!r} is too short to mean anything")
        if len(question) > 300:
            raise InvalidReply("the question is longer than 300 characters")
        if _META.search(question):
            raise InvalidReply(f"the question {question!r} asks about the prompt, not the passage's content")
        if from_json:
            if answer is None:
                return QuestionReply(question, None, "the JSON reply has no answer")
            return _with_answer(question, answer)
        rest = line[line.index("?") + 1 :] + "".join(lines[number + 1 :])
        rest = _NEXT_QUESTION.split(rest, maxsplit=1)[0]
        label = _ANSWER_LABEL.search(rest)
        if label is None:
            return QuestionReply(question, None, "the reply has no 'Answer:' line after the question")
        return _with_answer(question, _BLANK_LINE.split(rest[label.end() :].lstrip(), maxsplit=1)[0])
    snippet = text[:60].replace("\n", " ")
    raise InvalidReply(f"the reply holds no question (no line with a '?'): {snippet!r}")


def _with_answer(question: str, answer: str) -> QuestionReply:
    """The answer cleaned (whitespace collapsed, "The answer is:" and quotes dropped), or None with why."""
    cleaned = _FILLER.sub("", " ".join(answer.split())).strip().strip('"').strip()
    if not any(ch.isalnum() for ch in cleaned):
        problem = "the answer is empty"
    elif _PLACEHOLDER.match(cleaned):
        problem = f"the answer {cleaned!r} is a placeholder, not an answer"
    elif "?" in cleaned:
        problem = "the answer is itself a question"
    elif len(cleaned) > MAX_ANSWER_CHARS:
        problem = f"the answer has {len(cleaned)} characters, more than {MAX_ANSWER_CHARS}"
    else:
        return QuestionReply(question, cleaned)
    return QuestionReply(question, None, problem)


def parse_question(raw: str) -> str:
    """The question in a reply (see ``parse_reply``)."""
    return parse_reply(raw).question


def messages_for(passage: Passage) -> list[ChatMessage]:
    return [
        ChatMessage("system", SYSTEM),
        ChatMessage(
            "user",
            f"Passage:\n{passage.span.text.strip()}\n\nWrite one question this passage answers.\n"
            f"Reply like this:\nQuestion: <question>?\nAnswer: <answer from the passage>",
        ),
    ]


class ExcerptFirstGenerator:
    def __init__(
        self,
        client: LLMClient,
        *,
        n_questions: QuestionTarget = AUTO,
        seed: int = 13,
        min_chars: int = 200,
        max_chars: int = 600,
        params: CompletionParams | None = None,
        repair_attempts: int = 1,
        documents: Collection[str] | None = None,
        passages: Sequence[Passage] | None = None,
    ) -> None:
        """``passages``: those of a ``plan_passages`` made with this seed and sizes (else drawn here for
        ``n_questions``, a number or ``CountRule``)."""
        self.client = client
        self.planned = None if passages is None else tuple(passages)
        self.documents = None if documents is None else frozenset(documents)
        self.n_questions = n_questions
        self.seed = seed
        self.min_chars = min_chars
        self.max_chars = max_chars
        self.params = params or CompletionParams(max_tokens=160)  # a question and a sentence or two
        self.repair_attempts = repair_attempts

    def passages(self, corpus: Corpus) -> list[Passage]:
        """The passages asked about: selected over the whole corpus, then (``documents``) those of the
        documents being regenerated, so the LLM is asked about nothing else."""
        if self.planned is not None:
            passages = list(self.planned)
        else:
            passages = select_passages(corpus, self.n_questions, self.seed, self.min_chars, self.max_chars)
        if self.documents is None:
            return passages
        return [p for p in passages if p.span.doc_id in self.documents]

    def planned_requests(self, corpus: Corpus) -> list[tuple[list[ChatMessage], CompletionParams]]:
        return [(messages_for(p), self.params) for p in self.passages(corpus)]

    def generate(
        self, corpus: Corpus, progress: Progress = no_progress
    ) -> GenerationResult[TokenLevelExample]:
        return GenerationResult.concat(
            self.client.map(self._run, self.passages(corpus), progress, "question generation")
        )

    def _run(self, passage: Passage) -> GenerationResult[TokenLevelExample]:
        span = passage.span
        outcome = self.client.complete_parsed(
            messages_for(passage), self.params, parse_reply, SCHEMA_HINT, self.repair_attempts
        )
        if outcome.value is None:
            rejection = Rejection(
                outcome.failure or "invalid_reply",
                outcome.error or "",
                (span.doc_id,),
                metadata={"raw": outcome.raw, "passage": [span.start, span.end]},
            )
            return GenerationResult((), (rejection,))
        reply = outcome.value
        missing = {"reference_answer_missing": reply.answer_missing} if reply.reference_answer is None else {}
        example = TokenLevelExample(
            QuestionId("xf-" + sha256_hex(f"{reply.question}\0{span.doc_id}\0{span.start}:{span.end}")[:12]),
            reply.question,
            (span,),
            example_metadata(
                GENERATOR,
                self.client.model_id,
                PROMPT_VERSION,
                [span.doc_id],
                "single-document",
                None,
                passage_score=round(passage.score, 6),
                **missing,
            ),
            reference_answer=reply.reference_answer,
        )
        return GenerationResult((example,))
