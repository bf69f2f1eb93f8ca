"""Questions whose answers are quoted, not placed: each quoted excerpt is found in the corpus.

Real questions rarely come with character offsets; they come with the passage that answers them, copied
from the page, often a little loosely (curly quotes, re-flowed lines, a dropped ``**``, "..." for a cut).
The excerpt is located with the locator the LLM generator uses (core/generation/excerpts.py): exactly
where it can be, else after normalising case, quotes, dashes, whitespace and Markdown markers, and the
span is always real document text, mapped back to the original offsets.

A quote is ground truth only when it names one place. So an excerpt must occur exactly once in its
document (``doc_id`` given) or in the whole corpus (no ``doc_id``); one that occurs nowhere, or in
several places (copies that differ only in case or whitespace count: a reader cannot tell them apart
either), is an error. Every such row is listed in one error, with its document and where each copy is,
and nothing is imported: a half-imported file would quietly evaluate on other questions than yours.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..corpus.corpus import Corpus
from ..errors import DatasetError
from ..generation.excerpts import (
    MIN_EXCERPT_CHARS,
    NormalisedText,
    excerpt_occurrences,
    explain_miss,
    locate_excerpt,
    normalise,
    normalise_excerpt,
    split_excerpt,
)
from ..types import CharacterSpan, DocumentId, QuestionId
from .datasets import TokenLevelDataset, TokenLevelExample, default_question_id

QUOTED_COLUMNS = frozenset({"question", "excerpt"})
# The keys of a JSONL line of quoted questions.
QUOTED_KEYS = frozenset({"question", "excerpt", "doc_id", "question_id", "reference_answer", "metadata"})
# Rows named in the error before the rest are counted; copies named for one excerpt.
MAX_LISTED_ROWS = 20
MAX_LISTED_COPIES = 5


@dataclass(frozen=True)
class QuotedExcerpt:
    """One excerpt of one question, as the file states it."""

    row: int  # the data row (CSV) or line (JSONL)
    where: str  # "data row 3" or "line 3"
    question_id: QuestionId
    question: str
    excerpt: str
    doc_id: DocumentId | None  # None: anywhere in the corpus
    reference_answer: str | None = None
    metadata: Mapping[str, Any] | None = None


def quoted_csv_rows(
    rows: Iterable[tuple[int, Mapping[str, str | None]]], path: str
) -> Iterator[QuotedExcerpt]:
    """The excerpts of a CSV with ``question`` and ``excerpt`` columns (optional ``doc_id``,
    ``question_id``, ``reference_answer``), one excerpt a row; rows of one question share its id (or,
    without one, its text)."""
    for row_no, row in rows:
        where = f"data row {row_no}"
        question = (row.get("question") or "").strip()
        excerpt = row.get("excerpt") or ""
        if not question:
            raise DatasetError(f"{path}, {where}: column question is empty")
        if not excerpt.strip():
            raise DatasetError(
                f"{path}, {where}: column excerpt is empty; quote the passage that answers the question"
            )
        doc_id = (row.get("doc_id") or "").strip()
        answer = (row.get("reference_answer") or "").strip()
        yield QuotedExcerpt(
            row_no,
            where,
            QuestionId((row.get("question_id") or "").strip() or default_question_id(question)),
            question,
            excerpt,
            DocumentId(doc_id) if doc_id else None,
            answer or None,
        )


def quoted_jsonl_rows(objects: Iterable[tuple[int, dict[str, Any]]], path: str) -> Iterator[QuotedExcerpt]:
    """The excerpts of a JSONL file of ``{"question": ..., "excerpt": "..." or ["...", ...]}`` lines
    (optional ``doc_id``, ``question_id``, ``reference_answer``, ``metadata``), one question a line."""
    seen: dict[str, int] = {}
    for line_no, obj in objects:
        where = f"line {line_no}"
        unknown = sorted(set(obj) - QUOTED_KEYS)
        if unknown:
            raise DatasetError(
                f"{path}, {where}: unknown field(s) {', '.join(unknown)}; a quoted question has "
                f"{', '.join(sorted(QUOTED_KEYS))}"
            )
        question = obj.get("question")
        if not isinstance(question, str) or not question.strip():
            raise DatasetError(f"{path}, {where}: field question must be a non-empty string")
        raw = obj.get("excerpt")
        excerpts = [raw] if isinstance(raw, str) else raw
        if (
            not isinstance(excerpts, list)
            or not excerpts
            or not all(isinstance(e, str) and e.strip() for e in excerpts)
        ):
            raise DatasetError(
                f"{path}, {where}: field excerpt must be the quoted passage that answers the question (a "
                f"string), or a list of them"
            )
        fields = {}
        for key in ("doc_id", "question_id", "reference_answer"):
            value = obj.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise DatasetError(f"{path}, {where}: field {key} must be a non-empty string or left out")
            fields[key] = value.strip() if isinstance(value, str) else None
        metadata = obj.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise DatasetError(f"{path}, {where}: field metadata must be an object")
        question_id = QuestionId(fields["question_id"] or default_question_id(question.strip()))
        if question_id in seen:
            raise DatasetError(
                f"{path}, {where}: question id {question_id!r} already used on line {seen[question_id]}; "
                "give each question its own id (several excerpts go in one list)"
            )
        seen[question_id] = line_no
        for excerpt in excerpts:
            yield QuotedExcerpt(
                line_no,
                where,
                question_id,
                question.strip(),
                excerpt,
                DocumentId(fields["doc_id"]) if fields["doc_id"] else None,
                fields["reference_answer"],
                metadata,
            )


def place_quoted(
    excerpts: Sequence[QuotedExcerpt], corpus: Corpus, path: str, name: str
) -> TokenLevelDataset:
    """The questions of ``excerpts``, each excerpt placed in its document (or the corpus); a
    ``DatasetError`` listing every excerpt that is found nowhere or in several places."""
    texts = _NormalisedCorpus(corpus)
    spans: dict[QuestionId, list[CharacterSpan]] = {}
    first: dict[QuestionId, QuotedExcerpt] = {}
    answers: dict[QuestionId, QuotedExcerpt] = {}
    methods: dict[QuestionId, set[str]] = {}
    problems: list[str] = []
    for quoted in excerpts:
        known = first.setdefault(quoted.question_id, quoted)
        if known.question != quoted.question:
            raise DatasetError(
                f"{path}, {quoted.where}: question_id {quoted.question_id!r} already names another question "
                f"({known.question!r}, {known.where}); give each question its own id"
            )
        if quoted.reference_answer:
            answered = answers.setdefault(quoted.question_id, quoted)
            if answered.reference_answer != quoted.reference_answer:
                raise DatasetError(
                    f"{path}, {quoted.where}: question {quoted.question_id!r} has another reference_answer "
                    f"on {answered.where}; give it once"
                )
        placed = _place(quoted, corpus, texts)
        if isinstance(placed, str):
            problems.append(
                f"{quoted.where} ({quoted.question_id}, {_preview(quoted.question, 50)}): {placed}"
            )
            continue
        method, found = placed
        spans.setdefault(quoted.question_id, []).extend(found)
        methods.setdefault(quoted.question_id, set()).add(method)
    if problems:
        listed = problems[:MAX_LISTED_ROWS]
        more = [f"and {len(problems) - len(listed)} more"] if len(problems) > len(listed) else []
        raise DatasetError(
            f"{path}: {len(problems)} of {len(excerpts)} excerpts are not found exactly once in the corpus at "
            f"{corpus.root}, so nothing was imported:\n"
            + "\n".join(f"  {line}" for line in [*listed, *more])
            + "\nQuote the passage that answers the question (a whole sentence or two, as the page has it), "
            "and name its document in doc_id where the same text is on several pages"
        )
    examples = tuple(
        TokenLevelExample(
            question_id,
            quoted.question,
            tuple(sorted(set(spans[question_id]), key=lambda s: (s.doc_id, s.start, s.end))),
            {**(quoted.metadata or {}), "excerpt_match": _match(methods[question_id])},
            reference_answer=answers[question_id].reference_answer if question_id in answers else None,
        )
        for question_id, quoted in first.items()
    )
    return TokenLevelDataset(examples, name=name)


class _NormalisedCorpus:
    """Each document's normalised text, made once per import (an excerpt without a document is looked
    for in every document)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._texts: dict[str, NormalisedText] = {}

    def occurrences(self, doc_id: DocumentId, excerpt: str) -> tuple[tuple[CharacterSpan, ...], ...]:
        text = self.corpus[doc_id].text
        if doc_id not in self._texts:
            self._texts[doc_id] = normalise(text)
        return excerpt_occurrences(doc_id, text, excerpt, normalised=self._texts[doc_id])


def _place(
    quoted: QuotedExcerpt, corpus: Corpus, texts: _NormalisedCorpus
) -> tuple[str, tuple[CharacterSpan, ...]] | str:
    """(how it matched, its spans), or why it cannot be placed."""
    excerpt = _preview(quoted.excerpt)
    if quoted.doc_id is not None and quoted.doc_id not in corpus:
        return f"doc_id {quoted.doc_id!r} is not a document of the corpus"
    parts = split_excerpt(quoted.excerpt)
    shortest = min((len(normalise_excerpt(part)) for part in parts), default=0)
    if shortest < MIN_EXCERPT_CHARS:
        which = "its shortest part between ellipses has" if len(parts) > 1 else "it has"
        return (
            f"excerpt {excerpt} is too short to name one place: {which} {shortest} characters once "
            f"normalised, at least {MIN_EXCERPT_CHARS} are needed"
        )
    scope = [quoted.doc_id] if quoted.doc_id is not None else sorted(d.doc_id for d in corpus)
    found = [spans for doc_id in scope for spans in texts.occurrences(DocumentId(doc_id), quoted.excerpt)]
    if len(found) == 1:
        doc_id = found[0][0].doc_id
        match = locate_excerpt(doc_id, corpus[doc_id].text, quoted.excerpt)
        return (match.method, match.spans) if match is not None else ("normalised", found[0])
    if found:
        copies = ", ".join(_where(spans) for spans in found[:MAX_LISTED_COPIES])
        more = f" and {len(found) - MAX_LISTED_COPIES} more" if len(found) > MAX_LISTED_COPIES else ""
        fix = "quote more of the passage" + ("" if quoted.doc_id else ", or name its document in doc_id")
        return f"excerpt {excerpt} occurs {len(found)} times: {copies}{more}; {fix}"
    if quoted.doc_id is None:
        return f"excerpt {excerpt} is in none of the {len(scope)} documents, even normalised"
    why = explain_miss(corpus[quoted.doc_id].text, quoted.excerpt)
    why = why.replace("the excerpt is not in the document, even normalised: ", "even normalised, ")
    why = why.replace("the excerpt: not even", "not even")
    elsewhere = [
        spans
        for doc in sorted(corpus, key=lambda d: d.doc_id)
        if doc.doc_id != quoted.doc_id
        for spans in texts.occurrences(doc.doc_id, quoted.excerpt)
    ]
    hint = f" (it is in {_where(elsewhere[0])}: is doc_id right?)" if elsewhere else ""
    return f"excerpt {excerpt} is not in {quoted.doc_id}: {why}{hint}"


def _where(spans: tuple[CharacterSpan, ...]) -> str:
    return f"{spans[0].doc_id} " + " ".join(f"[{s.start}:{s.end}]" for s in spans)


def _match(methods: set[str]) -> str:
    return "normalised" if "normalised" in methods else "exact"


def _preview(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 3] + "...")
