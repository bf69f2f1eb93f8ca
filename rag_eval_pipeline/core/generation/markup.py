"""Lines of a document that are markup, navigation or a changelog rather than prose to ask about.

A question's reference is text a reader reads and that states a fact. Some lines are neither, and a
question about them rewards whatever retriever copies them best:

- markup: an include directive (``{* ../../docs_src/x.py hl[4] *}``), an admonition or block marker
  (``/// warning``, ``!!! note``, ``:::``), a reST directive, an HTML or comment line, a link
  definition (``[1]: https://...``), a line whose link targets and URLs outweigh the text a reader
  sees (``is_markup``);
- navigation: a list item or a lone line that is a link and hardly anything else (``- [Install](i.md)``,
  ``See [the guide](g.md).``), a table row whose cells are mostly links, and every line of a table
  whose rows are mostly such rows (a table of links, header included);
- release notes: every item of a list under a heading that names a version or a changelog
  (``## 0.110.0``, ``## [1.2.0] - 2024-05-01``, ``# Release notes``, ``### Latest changes``), and
  every item of a list whose items mostly read like changelog entries: they cite a pull request, issue,
  commit, author or version (``#123``, ``@user``, ``1.4.2``), or open with a changelog verb that
  instructions rarely use (``Fix``, ``Bump``, ``Refactor``, ``Fixed``, ``Added``, ``Removed``...).

Each rule looks at one document's text only (the passages of a document depend on it alone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A whole line that is markup, not prose: include directives ({* file *}, {! file !}, {% ... %}, --8<--),
# admonition and block markers (/// tip | Title, ///, !!! note, ??? note, :::), reStructuredText
# directives (.. note::), HTML comments and tag-only lines, front matter fences (---), link
# definitions ([id]: url).
_MARKUP_LINE = re.compile(
    r"""[ \t]*(?:
        \{[*!%].*[*!%]\}
      | -{2}8<-{2}.*
      | /{3}.*
      | (?:!!!|\?{3}\+?)(?:\s.*)?
      | :{3,}.*
      | \.\.[ \t]+[\w:-]+::.*
      | <!--.*|.*-->
      | (?:</?[A-Za-z][^>]*>[ \t]*)+
      | -{3,}
      | \[[^\]\n]+\]:[ \t]+\S+(?:[ \t]+["'(].*)?
    )[ \t]*\r?\n?""",
    re.VERBOSE,
)
# Link targets and bare URLs: characters a reader of the rendered page never sees.
_HIDDEN = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|<https?://[^>]*>|https?://\S+|</?[A-Za-z][^>]*>")
# A whole link, its text included: [text](target), [text][ref], an HTML anchor, an autolink, a bare URL.
# Link text may hold one level of brackets ([@dependabot[bot]](...)).
_LINK = re.compile(
    r"!?\[(?:[^\[\]\n]|\[[^\]\n]*\])*\](?:\([^)\n]*\)|\[[^\]\n]*\])"
    r"|<a\b[^>]*>.*?</a>|<https?://[^>\s]*>|https?://\S+",
    re.IGNORECASE,
)
# A Markdown link, to be read as its text.
_LINK_TEXT = re.compile(r"!?\[((?:[^\[\]\n]|\[[^\]\n]*\])*)\]\([^)\n]*\)")
_WORD = re.compile(r"[^\W_]+")
_FENCE = re.compile(r"[ \t]{0,3}(```|~~~)")
_HEADING = re.compile(r"[ \t]{0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_BULLET = re.compile(r"([ \t]*)(?:[-*+]|\d{1,3}[.)])[ \t]+(.*)$")
_TABLE_DELIMITER = re.compile(r"[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?[ \t]*$")

# A heading that names a version ("0.110.0", "v2.1", "[1.2.0] - 2024-05-01", "Version 3.0 (beta)",
# "Release 1.4") or a changelog.
_VERSION_HEADING = re.compile(
    r"(?:(?:version|release|v)[ \t]*)?\[?v?\d+(?:\.\d+){1,3}(?:[-+.]?[0-9A-Za-z.]+)?\]?"
    r"(?:[ \t]*(?:[-–—:(].*)?)?$",
    re.IGNORECASE,
)
_CHANGELOG_HEADING = re.compile(
    r"(?:release[ \t]+notes?|change[ \t]*log|changes[ \t]+in[ \t].*|what'?s[ \t]+new.*|latest[ \t]+changes"
    r"|unreleased|release[ \t]+history|version[ \t]+history)[ \t]*:?$",
    re.IGNORECASE,
)
# What a changelog entry cites: a pull request or issue (#123, PR 123, GH-123, a /pull/ or /issues/ link),
# an author (@user), a commit (7-40 hex digits holding a digit and a letter), a "v" version (v1.2).
_REFERENCE = re.compile(
    r"(?<![\w&])#\d{2,}\b|\b(?:PR|GH)[ \t#-]*\d+\b|/(?:pull|issues|commit)/\w+|(?<![\w.])@[A-Za-z0-9][\w-]*"
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b|\bv\d+(?:\.\d+)+\b",
    re.IGNORECASE,
)
# Verbs that open changelog entries and rarely an instruction ("Add the import" is a step; "Added the
# flag", "Fix crash", "Bump ruff" are entries).
_CHANGELOG_VERB = re.compile(
    r"fix(?:es|ed)?|bug-?fix(?:es)?|bump(?:s|ed)?|refactor(?:s|ed)?|revert(?:s|ed)?|deprecate[sd]?|added|"
    r"removed|changed|updated|upgraded|improved|dropped|renamed|merged",
    re.IGNORECASE,
)
# A conventional-commit type opening an entry: "feat(api): ...", "chore!: ...".
_COMMIT_TYPE = re.compile(
    r"\W*(?:feat|fix|chore|docs|refactor|perf|test|build|ci|style|revert|deps)(?:\([^)]*\))?!?:",
    re.IGNORECASE,
)
# How many words outside its links a line may have and still be only a link.
MAX_WORDS_BESIDE_A_LINK = 2


def is_markup(line: str) -> bool:
    """Whether a line is markup rather than prose: a directive or marker (``_MARKUP_LINE``), or a line
    whose link targets, URLs and tags hold more of its visible characters than the text a reader sees
    (a release-notes entry of PR and author links)."""
    if _MARKUP_LINE.fullmatch(line):
        return True
    visible = sum(1 for ch in line if not ch.isspace())
    hidden = sum(1 for ch in "".join(_HIDDEN.findall(line)) if not ch.isspace())
    return visible > 0 and hidden * 2 > visible


def is_link_only(text: str) -> bool:
    """A link and at most ``MAX_WORDS_BESIDE_A_LINK`` words beside it: navigation, not a statement."""
    if not _LINK.search(text):
        return False
    return len(_WORD.findall(_LINK.sub(" ", text))) <= MAX_WORDS_BESIDE_A_LINK


def reads_like_a_changelog_entry(item: str) -> bool:
    """A list item (without its bullet) that cites a pull request, issue, commit or author, opens with a
    conventional-commit type, or whose first word is a changelog verb (emoji and tags before it aside)."""
    if _REFERENCE.search(item) or _COMMIT_TYPE.match(item):
        return True
    first = _WORD.search(_LINK_TEXT.sub(r"\1", item))
    return bool(first and _CHANGELOG_VERB.fullmatch(first.group(0)))


@dataclass(frozen=True)
class _Line:
    start: int  # offset of the line in the text
    text: str  # without its line break


def markup_line_starts(text: str) -> frozenset[int]:
    """The offsets at which the lines of ``text`` that are not prose to ask about start (see the module):
    markup, navigation, tables of links and release-note lists. Fenced code is left to the caller."""
    lines = []
    pos = 0
    for raw in text.split("\n"):  # lines as the callers find them: after a "\n"
        lines.append(_Line(pos, raw.rstrip("\r")))
        pos += len(raw) + 1
    code = _fenced(lines)
    found: set[int] = set()
    for i, line in enumerate(lines):
        if i in code:
            continue
        if is_markup(line.text) or (_is_lone_line(lines, i, code) and is_link_only(line.text)):
            found.add(line.start)
    for block in _tables(lines, code):
        link_rows = [i for i in block[2:] if _is_link_row(lines[i].text)]
        if len(link_rows) * 2 > len(block) - 2:  # most body rows are links: a table of links
            found.update(lines[i].start for i in block)
        else:
            found.update(lines[i].start for i in link_rows)
    for items, under_changelog in _lists(lines, code):
        texts = [
            " ".join([_item_text(lines[item[0]].text)] + [lines[i].text for i in item[1:]]) for item in items
        ]
        entries = sum(reads_like_a_changelog_entry(text) for text in texts)
        release_notes = under_changelog or (len(items) >= 2 and entries * 3 >= len(items) * 2)
        for item in items:
            if release_notes or is_link_only(_item_text(lines[item[0]].text)):
                found.update(lines[i].start for i in item)
    return frozenset(found)


def _item_text(line: str) -> str:
    """A list item's first line without its bullet."""
    bullet = _BULLET.match(line)
    return bullet.group(2) if bullet else line


def _fenced(lines: list[_Line]) -> set[int]:
    """The indexes of the lines inside fenced code, fences included."""
    inside: set[int] = set()
    fence = None
    for i, line in enumerate(lines):
        if _FENCE.match(line.text):
            inside.add(i)
            fence = None if fence is not None else i
        elif fence is not None:
            inside.add(i)
    return inside


def _is_lone_line(lines: list[_Line], i: int, code: set[int]) -> bool:
    """A paragraph of one line: blank (or nothing) before and after it."""

    def blank(j: int) -> bool:
        return j < 0 or j >= len(lines) or j in code or not lines[j].text.strip()

    return blank(i - 1) and blank(i + 1)


def _cells(row: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", row.strip())
    if cells and not cells[0].strip():
        cells = cells[1:]
    if cells and not cells[-1].strip():
        cells = cells[:-1]
    return [c.strip() for c in cells]


def _is_link_row(row: str) -> bool:
    cells = [c for c in _cells(row) if c]
    return bool(cells) and sum(is_link_only(c) for c in cells) * 2 >= len(cells)


def _tables(lines: list[_Line], code: set[int]) -> list[list[int]]:
    """Each Markdown table as the indexes of its lines: header, delimiter row, body rows."""
    tables = []
    i = 0
    while i + 1 < len(lines):
        if i not in code and "|" in lines[i].text and _TABLE_DELIMITER.fullmatch(lines[i + 1].text):
            block = [i, i + 1]
            j = i + 2
            while j < len(lines) and j not in code and "|" in lines[j].text and lines[j].text.strip():
                block.append(j)
                j += 1
            tables.append(block)
            i = j
        else:
            i += 1
    return tables


def _lists(lines: list[_Line], code: set[int]) -> list[tuple[list[list[int]], bool]]:
    """Each list as its items (the indexes of each item's lines: the bullet line and the lines that
    continue it), and whether a heading above it names a version or a changelog. Blank lines between
    items keep the list going; anything else that is not indented ends it."""
    lists: list[tuple[list[list[int]], bool]] = []
    headings: list[tuple[int, bool]] = []  # (level, names a version or changelog) of the open sections
    items: list[list[int]] = []
    under_changelog = False

    def close() -> None:
        nonlocal items
        if items:
            lists.append((items, under_changelog))
        items = []

    for i, line in enumerate(lines):
        if i in code:
            close()
            continue
        heading = _HEADING.fullmatch(line.text)
        if heading:
            close()
            level, title = len(heading.group(1)), (heading.group(2) or "").strip()
            headings = [h for h in headings if h[0] < level]
            headings.append((level, bool(_VERSION_HEADING.match(title) or _CHANGELOG_HEADING.match(title))))
            under_changelog = any(named for _, named in headings)
            continue
        if _BULLET.match(line.text):
            items.append([i])
        elif not line.text.strip():
            continue
        elif items and (line.text[:1] in " \t" or (i > 0 and lines[i - 1].text.strip())):
            items[-1].append(i)  # an indented or lazy continuation of the item
        else:
            close()
    close()
    return lists
