"""Which parts of the corpus the questions are about: a document, or a section, no question touches is
one the leaderboard says nothing about.

A section is the text from a Markdown heading (an ATX ``#`` heading outside fenced code, any level) to
the next one; the text before a document's first heading is a section too. A document without
headings (plain text, reST, HTML) is one section. Only sections holding prose count (a heading followed
at once by a sub-heading, a block of code or markup alone holds nothing to ask about), and only
documents holding such a section. A question covers every section and document one of its reference
spans overlaps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..corpus.corpus import Corpus
from ..generation.passages import classified_sentences
from ..questions.datasets import TokenLevelExample
from ..types import CharacterSpan, Document, DocumentId


@dataclass(frozen=True)
class Section:
    doc_id: DocumentId
    start: int
    end: int
    title: str  # the heading's text without its '#' marks; "" before the first heading

    @property
    def chars(self) -> int:
        return self.end - self.start

    @property
    def name(self) -> str:
        """``doc § title`` (the document alone for the text before its first heading)."""
        return f"{self.doc_id} § {self.title}" if self.title else str(self.doc_id)


@dataclass(frozen=True)
class Gap:
    """A document or section no question is about, and its size in characters."""

    name: str
    doc_id: DocumentId
    chars: int


@dataclass(frozen=True)
class CoverageCount:
    """Of ``n`` documents (or sections), ``covered`` have a question; ``gaps`` are the rest, largest
    first (then by name)."""

    n: int
    covered: int
    gaps: tuple[Gap, ...]

    @property
    def share(self) -> float | None:
        return self.covered / self.n if self.n else None


@dataclass(frozen=True)
class Coverage:
    documents: CoverageCount
    sections: CoverageCount
    n_documents_without_prose: int  # in the corpus, not counted above


def document_sections(document: Document) -> list[Section]:
    """The sections of a document that hold prose, in order."""
    text = document.text
    sentences = classified_sentences(text)
    starts: dict[int, str] = {}
    for start, _, kind in sentences:
        if kind == "heading":
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", start)
            line = text[line_start : len(text) if line_end == -1 else line_end]
            starts.setdefault(line_start, line.strip().lstrip("#").strip())
    bounds = sorted(starts)
    if not bounds or bounds[0] > 0:
        bounds.insert(0, 0)
        starts.setdefault(0, "")
    sections = []
    for i, start in enumerate(bounds):
        end = bounds[i + 1] if i + 1 < len(bounds) else len(text)
        if any(kind == "prose" and start <= s < end for s, _, kind in sentences):
            sections.append(Section(document.doc_id, start, end, starts[start]))
    return sections


def coverage(corpus: Corpus, examples: Sequence[TokenLevelExample]) -> Coverage:
    """Documents and sections with at least one question, of those holding prose."""
    spans: dict[DocumentId, list[CharacterSpan]] = {}
    for span in (span for e in examples for span in e.relevant_spans):
        spans.setdefault(span.doc_id, []).append(span)
    sections = [s for document in sorted(corpus, key=lambda d: d.doc_id) for s in document_sections(document)]
    covered = [
        any(max(s.start, span.start) < min(s.end, span.end) for span in spans.get(s.doc_id, ()))
        for s in sections
    ]
    with_prose = {s.doc_id for s in sections}
    documents = [d for d in corpus if d.doc_id in with_prose]
    return Coverage(
        CoverageCount(
            len(documents),
            sum(1 for d in documents if d.doc_id in spans),
            _largest(Gap(d.doc_id, d.doc_id, len(d.text)) for d in documents if d.doc_id not in spans),
        ),
        CoverageCount(
            len(sections),
            sum(covered),
            _largest(Gap(s.name, s.doc_id, s.chars) for s, c in zip(sections, covered, strict=True) if not c),
        ),
        len(corpus) - len(documents),
    )


def _largest(gaps: Iterable[Gap]) -> tuple[Gap, ...]:
    return tuple(sorted(gaps, key=lambda g: (-g.chars, g.name)))
