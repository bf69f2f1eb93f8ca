"""What every generator returns: the examples it made and, for everything it could not make, why.

Nothing is dropped silently: a question that fails (bad JSON after repair, an excerpt not found in its
document, a duplicate, a question no retriever can tie back to its source) becomes a ``Rejection``
row with its reason, and the dataset asset keeps those rows next to the accepted ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..llm.json_reply import InvalidReply
from ..questions.datasets import ChunkLevelExample, TokenLevelExample
from ..types import Rejection

# Keys every generated example's metadata carries (values may be None where unknown).
METADATA_KEYS = (
    "generator",
    "model",
    "prompt_version",
    "source_doc_ids",
    "question_type",
    "difficulty",
)


def example_metadata(
    generator: str,
    model: str | None,
    prompt_version: str | None,
    source_doc_ids: Sequence[str],
    question_type: str | None = None,
    difficulty: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "generator": generator,
        "model": model,
        "prompt_version": prompt_version,
        "source_doc_ids": list(source_doc_ids),
        "question_type": question_type,
        "difficulty": difficulty,
        **extra,
    }


# "A question of a few words": counted in words, not characters, so "Why not?" (two words) is refused
# as too short in every generator, and "Who is Ada?" is not refused for being nine characters long.
MIN_QUESTION_WORDS = 3
DIFFICULTIES = ("easy", "medium", "hard")


def has_few_words(question: str) -> bool:
    """Whether ``question`` is too short to mean anything: fewer than ``MIN_QUESTION_WORDS`` words. The
    one rule for every generator's replies (JSON questions and excerpt-first's plain-text ones)."""
    return len(question.split()) < MIN_QUESTION_WORDS


def question_items(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The reply's ``questions``, each with its key path (``questions[0]``) for error messages. Not a
    non-empty list of objects raises ``InvalidReply``, so the client sends its repair prompt."""
    items = obj.get("questions")
    if not isinstance(items, list) or not items:
        raise InvalidReply('"questions" must be a non-empty list')
    checked: list[tuple[str, Mapping[str, Any]]] = []
    for i, item in enumerate(items):
        where = f"questions[{i}]"
        if not isinstance(item, dict):
            raise InvalidReply(f"{where} must be an object")
        checked.append((where, item))
    return checked


def question_of(item: Mapping[str, Any], where: str) -> str:
    """The reply item's ``question``, whitespace collapsed; not a string or too short (``has_few_words``)
    raises ``InvalidReply``."""
    question = item.get("question")
    if not isinstance(question, str) or has_few_words(question):
        raise InvalidReply(f"{where}.question must be a question of a few words")
    return " ".join(question.split())


def difficulty_of(item: Mapping[str, Any]) -> str | None:
    """The reply item's ``difficulty`` when it is one of ``DIFFICULTIES``, else None (it is optional)."""
    difficulty = item.get("difficulty")
    return difficulty if difficulty in DIFFICULTIES else None


# A reference answer is one or two sentences; anything much longer is a summary, not an answer.
MAX_ANSWER_CHARS = 600


def reference_answer_of(item: Mapping[str, Any], where: str, source: str) -> str:
    """The reply item's ``reference_answer``, whitespace collapsed. Missing, blank or far longer than two
    sentences raises ``InvalidReply``, so the client sends its repair prompt; ``source`` names what the
    answer must rest on ("the excerpts", "the chunks")."""
    answer = item.get("reference_answer")
    if not isinstance(answer, str) or not answer.strip():
        raise InvalidReply(
            f"{where}.reference_answer must be one or two sentences answering the question from {source} alone"
        )
    answer = " ".join(answer.split())
    if len(answer) > MAX_ANSWER_CHARS:
        raise InvalidReply(
            f"{where}.reference_answer has {len(answer)} characters: answer in one or two sentences "
            f"(at most {MAX_ANSWER_CHARS} characters)"
        )
    return answer


ExampleT = TypeVar("ExampleT", TokenLevelExample, ChunkLevelExample)


@dataclass(frozen=True)
class GenerationResult(Generic[ExampleT]):
    examples: tuple[ExampleT, ...]
    rejections: tuple[Rejection, ...] = ()

    @staticmethod
    def concat(results: Sequence[GenerationResult[ExampleT]]) -> GenerationResult[ExampleT]:
        """One result from the per-task results, in task order."""
        return GenerationResult(
            tuple(e for r in results for e in r.examples), tuple(x for r in results for x in r.rejections)
        )
