"""The document formats a corpus folder may hold, and how each becomes the document's text: the text
that is chunked, embedded, shown, and that every span's ``start``/``end`` index into.

A reader takes the file's decoded text and returns the document's text. Whatever a reader changes (HTML
loses its markup) happens once, here, before any offset exists, so ``doc.text[start:end]`` is exact
downstream whatever the format. Markdown, plain text and reStructuredText are kept as they are; HTML is
reduced to the text a reader of the page sees.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

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


# Elements whose content a reader of the page never sees as text.
_DROPPED = frozenset({"head", "script", "style", "template", "noscript", "svg"})
# Blocks: a blank line before and after (a line break inside a list item, a space inside a table cell).
_PARAGRAPHS = frozenset(
    {
        *("address", "article", "aside", "blockquote", "body", "center", "details", "dialog", "div"),
        *("fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6"),
        *("header", "hgroup", "hr", "html", "legend", "main", "nav", "p", "section", "summary"),
        *("dl", "ol", "ul", "menu", "dir"),
    }
)
# List items (and definition terms and descriptions): each on its own line, blocks inside them too.
_LIST_ITEMS = frozenset({"li", "dt", "dd"})
_CELL_SEPARATOR = " | "
_SEPARATORS = (" ", "\n", "\n\n")  # by break strength: within a cell, a line, a paragraph
_SPACE, _LINE, _PARAGRAPH = 0, 1, 2
_WHITESPACE = re.compile(r"\s+")


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
    with warnings.catch_warnings():
        # the file is HTML by its extension: a page that is only a URL, or XHTML, is still read as HTML
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(text, "lxml")
    out = _TextBuilder()
    _render(soup, out, _PARAGRAPH)
    return out.result()


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


class _TextBuilder:
    """Lines of collapsed inline text joined by the strongest break asked for between them."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._line: list[str] = []
        self._pending = _SPACE

    def text(self, text: str) -> None:
        self._line.append(text)

    def brk(self, strength: int) -> None:
        self._flush()
        self._pending = max(self._pending, strength)

    def verbatim(self, text: str) -> None:
        self._flush()
        if text.strip():
            self._emit(text)

    def result(self) -> str:
        self._flush()
        return "".join(self._parts)

    def _flush(self) -> None:
        line = _WHITESPACE.sub(" ", "".join(self._line)).strip()
        self._line.clear()
        if line:
            self._emit(line)

    def _emit(self, text: str) -> None:
        if self._parts:
            self._parts.append(_SEPARATORS[self._pending])
        self._parts.append(text)
        self._pending = _SPACE


class _Break:
    """The break owed when leaving a block (a stack entry of the iterative walk)."""

    __slots__ = ("strength",)

    def __init__(self, strength: int) -> None:
        self.strength = strength


def _render(root: Tag, out: _TextBuilder, cap: int) -> None:
    """Walk ``root`` (without recursion: deep pages stay within Python's stack), breaks capped at
    ``cap`` (a paragraph inside a list item is a new line, inside a table cell a space)."""
    stack: list[tuple[PageElement | _Break, int]] = [(root, cap)]
    while stack:
        node, limit = stack.pop()
        if isinstance(node, _Break):
            out.brk(node.strength)
        elif isinstance(node, NavigableString):
            if not isinstance(node, PreformattedString):  # comments, doctype, CDATA, instructions
                out.text(str(node))
        elif isinstance(node, Tag) and _shown(node):
            name = node.name
            if name == "br":
                out.brk(min(_LINE, limit))
            elif name == "pre":
                out.brk(min(_PARAGRAPH, limit))
                if limit >= _LINE:
                    out.verbatim(_preformatted(node))
                else:
                    out.text(_preformatted(node))
                out.brk(min(_PARAGRAPH, limit))
            elif name == "table":
                out.brk(min(_PARAGRAPH, limit))
                _render_table(node, out, limit)
                out.brk(min(_PARAGRAPH, limit))
            else:
                inner = limit
                if name in _PARAGRAPHS or name in _LIST_ITEMS:
                    strength = min(_LINE if name in _LIST_ITEMS else _PARAGRAPH, limit)
                    inner = min(limit, _LINE) if name in _LIST_ITEMS else limit
                    out.brk(strength)
                    stack.append((_Break(strength), limit))
                stack.extend((child, inner) for child in reversed(node.contents))


def _shown(tag: Tag) -> bool:
    return tag.name not in _DROPPED and not tag.has_attr("hidden")


def _render_table(table: Tag, out: _TextBuilder, cap: int) -> None:
    """The caption, then one line per row of this table (not of tables nested in its cells)."""
    row_break = min(_LINE, cap)
    caption = table.find("caption", recursive=False)
    if isinstance(caption, Tag) and _shown(caption):
        out.text(_cell_text(caption))
        out.brk(row_break)
    for row in table.find_all("tr"):
        if row.find_parent("table") is not table or not _shown(row):
            continue
        cells = [_cell_text(c) for c in row.find_all(["td", "th"], recursive=False) if _shown(c)]
        if any(cells):
            out.text(_CELL_SEPARATOR.join(cells))
            out.brk(row_break)


def _cell_text(cell: Tag) -> str:
    inner = _TextBuilder()
    _render(cell, inner, _SPACE)
    return inner.result()


def _preformatted(pre: Tag) -> str:
    """The text of ``pre`` as written (``br`` as a newline, CRLF as LF), without leading and trailing
    blank lines; what is dropped elsewhere is dropped here too."""
    pieces = []
    for node in pre.descendants:
        if any(isinstance(p, Tag) and not _shown(p) for p in _ancestors_within(node, pre)):
            continue
        if isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            pieces.append(str(node))
        elif isinstance(node, Tag) and node.name == "br":
            pieces.append("\n")
    text = "".join(pieces).replace("\r\n", "\n").replace("\r", "\n")
    return text.strip("\n").rstrip()


def _ancestors_within(node: PageElement, top: Tag) -> Iterable[PageElement]:
    """``node`` itself (when it is a tag) and its parents below ``top``."""
    current: PageElement | None = node
    while current is not None and current is not top:
        yield current
        current = current.parent


def describe_skipped(paths: Sequence[str], shown: int = 10) -> str:
    """What the corpus left out and why, naming the first ``shown`` files: the warning of a load."""
    names = ", ".join(paths[:shown]) + (f" (+{len(paths) - shown} more)" if len(paths) > shown else "")
    return (
        f"skipped {len(paths)} files with extensions the corpus does not read "
        f"({describe_counts(count_by_extension(paths))}): {names}; the formats read are "
        f"{', '.join(KNOWN_EXTENSIONS)}: convert a file to one of them to include it"
    )
