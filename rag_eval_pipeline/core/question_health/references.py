"""What a question's reference is: its length, and whether it holds markup a reader never sees.

A reference that is an include directive (``{* ../../docs_src/app.py hl[4] *}``) or an admonition
marker is ground truth no answer can quote. Lines are classified as the passage chooser classifies them
(``classified_sentences`` in core/generation/passages.py, with the whole document as context, so a line
inside fenced code is code); a markup line is then labelled by its opening characters.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import Literal, get_args

from ..corpus.corpus import Corpus
from ..generation.passages import SentenceKind, classified_sentences
from ..questions.datasets import TokenLevelExample
from ..spans import merge_intervals, total_length
from ..types import DocumentId, QuestionId

MarkupKind = Literal["include", "admonition", "html", "links", "code", "other"]
MARKUP_KINDS: tuple[MarkupKind, ...] = get_args(MarkupKind)
# What each kind is, for the report's words.
MARKUP_NAMES: dict[MarkupKind, str] = {
    "include": "include directives",
    "admonition": "admonition or directive markers",
    "html": "HTML or comment lines",
    "links": "lines mostly of link targets",
    "code": "fenced code",
    "other": "other markup lines",
}
_INCLUDE = ("{*", "{!", "{%", "--8<--")
_ADMONITION = re.compile(r"(?:/{3}|!!!|\?{3}|:{3}|\.\.[ \t]+[\w:-]+::)")


def reference_chars(example: TokenLevelExample) -> int:
    """Characters of the question's reference, its spans merged (an overlap counts once)."""
    return total_length(merge_intervals(example.relevant_spans))


def markup_kind(line: str) -> MarkupKind:
    """Which markup a line the passage chooser calls markup (``is_markup``) is."""
    stripped = line.strip()
    if stripped.startswith(_INCLUDE):
        return "include"
    if _ADMONITION.match(stripped):
        return "admonition"
    if stripped.startswith("<") or stripped.endswith("-->"):
        return "html"
    if stripped and set(stripped) == {"-"}:
        return "other"  # a front matter fence
    return "links"


def reference_markup(
    examples: Sequence[TokenLevelExample], corpus: Corpus
) -> dict[QuestionId, tuple[MarkupKind, ...]]:
    """The kinds of markup each question's reference overlaps (in ``MARKUP_KINDS`` order; empty: prose
    only). A reference in a document the corpus no longer holds is left empty."""
    sentences: dict[DocumentId, list[tuple[int, int, SentenceKind]]] = {}
    ends: dict[DocumentId, list[int]] = {}
    found: dict[QuestionId, tuple[MarkupKind, ...]] = {}
    for example in examples:
        kinds: set[MarkupKind] = set()
        for span in example.relevant_spans:
            if span.doc_id not in corpus:
                continue
            text = corpus[span.doc_id].text
            if span.doc_id not in sentences:  # in order, disjoint: the first one ending after the span
                sentences[span.doc_id] = classified_sentences(text)  # starts is found by bisection
                ends[span.doc_id] = [end for _, end, _ in sentences[span.doc_id]]
            first = bisect_right(ends[span.doc_id], span.start)
            for start, _, kind in sentences[span.doc_id][first:]:
                if start >= span.end:
                    break
                if kind == "code":
                    kinds.add("code")
                elif kind == "markup":
                    line_start = text.rfind("\n", 0, start) + 1
                    line_end = text.find("\n", start)
                    kinds.add(markup_kind(text[line_start : len(text) if line_end == -1 else line_end]))
        found[example.question_id] = tuple(k for k in MARKUP_KINDS if k in kinds)
    return found
