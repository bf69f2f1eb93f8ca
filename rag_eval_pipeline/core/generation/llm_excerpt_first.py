"""Excerpt-first questions: informative passages are chosen first (offsets known by construction), then
the LLM writes one question each passage answers. Nothing has to be located afterwards, which is what
makes this mode work with small local models that cannot quote reliably."""

from __future__ import annotations

import json
import re

from ..corpus import Corpus
from ..datasets import TokenLevelExample
from ..llm.base import ChatMessage, CompletionParams
from ..llm.client import LLMClient
from ..llm.json_reply import InvalidReply
from ..progress import Progress, no_progress
from ..types import QuestionId, sha256_hex
from .base import GenerationResult, Rejection, example_metadata
from .passages import Passage, select_passages

PROMPT_VERSION = "excerpt-first-v2"
GENERATOR = "llm-excerpt-first"

# Of the wordings tried on SmolLM2-135M (16 passages), this one and a plainer one gave the most usable
# questions; JSON replies failed (0 of 8), so the reply is plain text.
SYSTEM = (
    "You write quiz questions. The answer to your question must be stated in the passage. "
    "Reply with the question only."
)
# Questions about the prompt rather than the passage's content: a small model's favourite escape.
_META = re.compile(r"\b(?:passage|this question|answer to)\b", re.IGNORECASE)
SCHEMA_HINT = "one line: a question that ends with '?'"

_PREFIX = re.compile(r"^\s*(?:[-*\d.)\s]*)(?:question\s*\d*\s*[:.-]\s*)?", re.IGNORECASE)


def parse_question(raw: str) -> str:
    """The question in a reply: a JSON ``{"question": ...}`` or the first line that asks something."""
    text = raw.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("question"), str):
            text = value["question"]
    for line in text.splitlines():
        line = _PREFIX.sub("", line).strip().strip('"').strip()
        if "?" in line:
            question = line[: line.index("?") + 1].strip()
            if len(question.split()) < 3:
                raise InvalidReply(f"the question {question!r} is too short to mean anything")
            if len(question) > 300:
                raise InvalidReply("the question is longer than 300 characters")
            if _META.search(question):
                raise InvalidReply(
                    f"the question {question!r} asks about the prompt, not the passage's content"
                )
            return question
    snippet = text[:60].replace("\n", " ")
    raise InvalidReply(f"the reply holds no question (no line with a '?'): {snippet!r}")


def messages_for(passage: Passage) -> list[ChatMessage]:
    return [
        ChatMessage("system", SYSTEM),
        ChatMessage(
            "user", f"Passage:\n{passage.span.text.strip()}\n\nWrite one question this passage answers."
        ),
    ]


class ExcerptFirstGenerator:
    def __init__(
        self,
        client: LLMClient,
        *,
        n_questions: int = 40,
        seed: int = 13,
        min_chars: int = 200,
        max_chars: int = 600,
        params: CompletionParams | None = None,
        repair_attempts: int = 1,
    ) -> None:
        self.client = client
        self.n_questions = n_questions
        self.seed = seed
        self.min_chars = min_chars
        self.max_chars = max_chars
        self.params = params or CompletionParams(max_tokens=64)
        self.repair_attempts = repair_attempts

    def passages(self, corpus: Corpus) -> list[Passage]:
        return select_passages(corpus, self.n_questions, self.seed, self.min_chars, self.max_chars)

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
            messages_for(passage), self.params, parse_question, SCHEMA_HINT, self.repair_attempts
        )
        if outcome.value is None:
            rejection = Rejection(
                outcome.failure or "invalid_reply",
                outcome.error or "",
                (span.doc_id,),
                metadata={"raw": outcome.raw, "passage": [span.start, span.end]},
            )
            return GenerationResult((), (rejection,))
        question = outcome.value
        example = TokenLevelExample(
            QuestionId("xf-" + sha256_hex(f"{question}\0{span.doc_id}\0{span.start}:{span.end}")[:12]),
            question,
            (span,),
            example_metadata(
                GENERATOR,
                self.client.model_id,
                PROMPT_VERSION,
                [span.doc_id],
                "single-document",
                None,
                passage_score=round(passage.score, 6),
            ),
        )
        return GenerationResult((example,))
