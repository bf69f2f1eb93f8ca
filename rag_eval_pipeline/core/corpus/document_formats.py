"""The document formats a corpus folder may hold, and how each becomes the document's text: the text
that is chunked, embedded, shown, and that every span's ``start``/``end`` index into.

A reader takes the file's decoded text and returns the document's text. Whatever a reader changes (HTML
loses its markup) happens once, here, before any offset exists, so ``doc.text[start:end]`` is exact
downstream whatever the format. Markdown, plain text and reStructuredText are kept as they are; HTML is
reduced to the text a reader of the page sees.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

FormatName = Literal["markdown", "text", "restructuredtext", "html"]

NO_EXTENSION = "(no extension)"


def read_markdown(text: str) -> str:
    """Kept as written: markdown is meant to be read as text, its markers (``#``, ``-``, ``**``) carry
    structure the chunkers use, and a span then indexes the very file a person opens."""
    return text


def read_plain_text(text: str) -> str:
    """Kept as written: there is no markup to remove, and newlines are structure."""
    return text


def read_restructuredtext(text: str) -> str:
    """Kept as written, like markdown: reST is readable as text (its underlines and directives are few
    characters), while rendering it would need docutils and the project's Sphinx extensions, and would
    break the link between a span and the source line a writer edits."""
    return text


def read_html(text: str) -> str:
    """The text a reader of the page sees: what a search for a sentence should find, and what a
    question's excerpt can quote. Markup, ``head`` (title and metadata), scripts, styles, templates,
    ``noscript`` notices, inline SVG drawings, comments and elements marked ``hidden`` are dropped;
    entities are unescaped. Blocks (paragraphs, headings, lists, tables, ``pre``) are separated by a
    blank line, each list item and each table row is on its own line (cells joined by `` | ``), ``br``
    is a line break; inside a block every run of whitespace (``&nbsp;`` too) is one space, except in
    ``pre``, whose lines are kept as written (code stays code). No bullet or number is added: the text
    holds only what the page shows. Parsed by lxml through Beautiful Soup, which closes unclosed
    ``p``/``li``/``td`` as browsers do; the same file always gives the same text."""
    from .html_text import page_text  # Beautiful Soup and lxml load when a page is read, not with the package

    return page_text(text)


@dataclass(frozen=True)
class DocumentFormat:
    name: FormatName
    extensions: tuple[str, ...]
    read: Callable[[str], str]
    # The document's text is the file's text: a hash of the file's bytes is a hash of the text
    # (core/corpus/corpus_state.py then never parses the file).
    verbatim: bool


FORMATS: tuple[DocumentFormat, ...] = (
    DocumentFormat("markdown", (".md", ".markdown"), read_markdown, verbatim=True),
    DocumentFormat("text", (".txt",), read_plain_text, verbatim=True),
    DocumentFormat("restructuredtext", (".rst",), read_restructuredtext, verbatim=True),
    DocumentFormat("html", (".html", ".htm"), read_html, verbatim=False),
)

# Extension (lower case, with its dot) -> format.
FORMAT_BY_EXTENSION: Mapping[str, DocumentFormat] = {ext: f for f in FORMATS for ext in f.extensions}
KNOWN_EXTENSIONS: tuple[str, ...] = tuple(FORMAT_BY_EXTENSION)


def extension_of(path: str | PurePath) -> str:
    """The file's extension in lower case with its dot (``.HTML`` -> ``.html``), or NO_EXTENSION."""
    return PurePath(path).suffix.lower() or NO_EXTENSION


def format_of(path: str | PurePath) -> DocumentFormat | None:
    """The format a file (or a document id) is read as; None for an extension no reader knows."""
    return FORMAT_BY_EXTENSION.get(extension_of(path))


def count_by_extension(paths: Iterable[str | PurePath]) -> dict[str, int]:
    """How many files per extension, most first (ties by extension): how skipped files are reported."""
    counts = Counter(extension_of(p) for p in paths)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def describe_counts(counts: Mapping[str, int]) -> str:
    """``.pdf 2, .docx 1``."""
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def describe_skipped(paths: Sequence[str], shown: int = 10) -> str:
    """What the corpus left out and why, naming the first ``shown`` files: the warning of a load."""
    names = ", ".join(paths[:shown]) + (f" (+{len(paths) - shown} more)" if len(paths) > shown else "")
    return (
        f"skipped {len(paths)} files with extensions the corpus does not read "
        f"({describe_counts(count_by_extension(paths))}): {names}; the formats read are "
        f"{', '.join(KNOWN_EXTENSIONS)}: convert a file to one of them to include it"
    )
