"""An HTML page reduced to the text a reader of it sees (document_formats.read_html says what is kept):
a module of its own so that Beautiful Soup and lxml are imported only when a corpus holds a page."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

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


def page_text(text: str) -> str:
    """The text of the page ``text`` (document_formats.read_html)."""
    with warnings.catch_warnings():
        # the file is HTML by its extension: a page that is only a URL, or XHTML, is still read as HTML
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(text, "lxml")
    out = _TextBuilder()
    _render(soup, out, _PARAGRAPH)
    return out.result()


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
