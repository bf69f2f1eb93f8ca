"""Placing an LLM-quoted excerpt in its source document, with offsets into the real text.

LLMs quote loosely: they curl quotes, re-flow whitespace, drop ``**`` markers, change case, cut a
long passage with "...". Rejecting every such quote wastes good questions, but a span found by a loose
match must still be real document text. So the loose match runs on a normalised copy of the document
that remembers, for every normalised character, the original character it came from; the span then
runs from the original of the first matched character to just after the original of the last, and
``text[start:end]`` is always a slice of the document.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ..types import CharacterSpan, DocumentId

# Shorter excerpts (once normalised) occur in too many places to pin a reference span on.
MIN_EXCERPT_CHARS = 12

# Markdown emphasis / code markers and invisible characters: present or not, the text reads the same.
_IGNORED = frozenset("*_`\u200b\u200c\u200d\u2060\ufeff\u00ad")
_REPLACEMENTS = {
    **dict.fromkeys("‘’‚‛′´", "'"),
    **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"),
    "…": "...",
}
# "...", ". . ." or "…" inside an excerpt: the LLM left something out, so each side is found alone.
_ELLIPSIS = re.compile(r"…|\.(?:[ \t]?\.){2,}")


@dataclass(frozen=True)
class ExcerptMatch:
    """Where an excerpt is: one span per ellipsis-separated part, in document order.

    ``occurrences`` is how many places the (most repeated) part matches with the method that found
    it: above 1, the first was taken and the reference may point at the wrong copy.
    """

    spans: tuple[CharacterSpan, ...]
    method: Literal["exact", "normalised"]
    occurrences: int


@dataclass(frozen=True)
class NormalisedText:
    """A normalised text and, for each of its characters, the offset of the original it came from."""

    text: str
    offsets: Sequence[int]  # an array("q"): 8 bytes a character, where a tuple of ints costs ~36


def normalise(text: str) -> NormalisedText:
    """Fold case, accents, quotes and dashes; drop markdown markers; collapse whitespace runs to one space.

    Built character by character (``str.lower`` of the whole text can change its length, e.g. "İ"),
    so every output character knows its source. Nothing is trimmed: offsets cover the whole text.
    """
    return _normalise_cached(text)


@lru_cache(maxsize=16)  # generators place many excerpts per document, one document after another
def _normalise_cached(text: str) -> NormalisedText:
    out: list[str] = []
    offsets = array("q")
    for i, ch in enumerate(text):
        folded = _fold_ascii(ch) if ch.isascii() else _fold(ch)
        for piece in folded:
            if piece == " " and out and out[-1] == " ":
                continue
            out.append(piece)
            offsets.append(i)
    return NormalisedText("".join(out), offsets)


def _fold_ascii(ch: str) -> str:
    if ch in "*_`":
        return ""
    if ch.isspace():
        return " "
    return ch.lower()


@lru_cache(maxsize=4096)
def _fold(ch: str) -> str:
    """The normalised form of one non-ASCII character (possibly several characters, possibly none)."""
    if ch in _REPLACEMENTS:  # before NFKD, which would turn "´" into a space and a combining accent
        return _REPLACEMENTS[ch]
    pieces = []
    for c in unicodedata.normalize("NFKD", ch):
        if unicodedata.combining(c) or c in _IGNORED:
            continue
        if c.isspace():
            pieces.append(" ")
        elif c in _REPLACEMENTS:
            pieces.append(_REPLACEMENTS[c])
        else:
            # casefold can itself yield decomposable or combining characters ("ǰ" -> "ǰ").
            pieces.extend(
                d
                for d in unicodedata.normalize("NFKD", c.casefold())
                if not unicodedata.combining(d) and d not in _IGNORED
            )
    return "".join(pieces)


def _trimmable(ch: str) -> bool:
    return ch.isspace() or ch in _IGNORED or unicodedata.category(ch).startswith("P")


def normalise_excerpt(excerpt: str) -> str:
    """The excerpt as the document's normalised text must contain it: also trimmed of edge punctuation.

    Trimming runs on the original characters, before folding, so a match never starts or ends inside
    the expansion of one character.
    """
    start, end = 0, len(excerpt)
    while start < end and _trimmable(excerpt[start]):
        start += 1
    while end > start and _trimmable(excerpt[end - 1]):
        end -= 1
    return normalise(excerpt[start:end]).text.strip(" ")


def split_excerpt(excerpt: str) -> list[str]:
    """The parts of an excerpt between ellipses, without parts that hold no text at all."""
    return [part for part in _ELLIPSIS.split(excerpt) if normalise_excerpt(part)]


def locate_excerpt(
    doc_id: DocumentId, text: str, excerpt: str, *, min_chars: int = MIN_EXCERPT_CHARS
) -> ExcerptMatch | None:
    """The spans of ``excerpt`` in ``text``, exact match first, or None (see ``explain_miss``).

    Every part must have ``min_chars`` normalised characters; parts are found in order, each after
    the end of the previous one. The first occurrence wins, and ``occurrences`` reports the others.
    """
    whole = excerpt.strip()
    if len(normalise_excerpt(whole)) >= min_chars:
        found = text.find(whole)
        if found >= 0:
            span = CharacterSpan(doc_id, found, found + len(whole), whole)
            return ExcerptMatch((span,), "exact", _count_exact(text, whole))
    parts = split_excerpt(excerpt)
    if not parts or any(len(normalise_excerpt(part)) < min_chars for part in parts):
        return None
    spans = []
    methods = []
    occurrences = 0
    cursor = 0
    for part in parts:
        located = _locate_part(text, part, cursor)
        if located is None:
            return None
        start, end, method, count = located
        spans.append(CharacterSpan(doc_id, start, end, text[start:end]))
        methods.append(method)
        occurrences = max(occurrences, count)
        cursor = end
    return ExcerptMatch(
        tuple(spans), "exact" if all(m == "exact" for m in methods) else "normalised", occurrences
    )


def _locate_part(
    text: str, part: str, cursor: int
) -> tuple[int, int, Literal["exact", "normalised"], int] | None:
    stripped = part.strip()
    found = text.find(stripped, cursor)
    if found >= 0:
        return found, found + len(stripped), "exact", _count_exact(text, stripped)
    needle = normalise_excerpt(part)
    norm = normalise(text)
    pos = _find_aligned(norm, needle, bisect_left(norm.offsets, cursor))
    if pos < 0:
        return None
    start, end = _original(text, norm, pos, len(needle))
    return start, end, "normalised", _count_aligned(norm, needle)


def _original(text: str, norm: NormalisedText, pos: int, length: int) -> tuple[int, int]:
    """The offsets in ``text`` of the normalised characters ``[pos, pos + length)``."""
    start = norm.offsets[pos]
    end = norm.offsets[pos + length - 1] + 1
    # A combining mark after the last matched letter was folded away; keep it with its letter.
    while end < len(text) and unicodedata.combining(text[end]):
        end += 1
    return start, end


def excerpt_occurrences(
    doc_id: DocumentId,
    text: str,
    excerpt: str,
    *,
    min_chars: int = MIN_EXCERPT_CHARS,
    normalised: NormalisedText | None = None,
) -> tuple[tuple[CharacterSpan, ...], ...]:
    """Every place ``excerpt`` occurs in ``text`` when matched loosely, as ``locate_excerpt`` matches it:
    its parts between ellipses in order, each normalised; one placement (its spans) for each occurrence
    of the first part that the others follow. None when it does not occur or a part is shorter than
    ``min_chars``; more than one when the excerpt does not say which copy it means (a copy differing
    only in case, quotes or whitespace counts: a reader could not tell them apart either). Overlapping
    occurrences count. ``normalised``: ``normalise(text)``, when the caller keeps it for many excerpts.
    """
    parts = split_excerpt(excerpt)
    needles = [normalise_excerpt(part) for part in parts]
    if not needles or any(len(needle) < min_chars for needle in needles):
        return ()
    norm = normalised if normalised is not None else normalise(text)
    placements: list[tuple[CharacterSpan, ...]] = []
    first = _find_aligned(norm, needles[0], 0)
    while first >= 0:
        found = [(first, len(needles[0]))]
        cursor = first + len(needles[0])
        for needle in needles[1:]:
            pos = _find_aligned(norm, needle, cursor)
            if pos < 0:  # a later start leaves even less text to find the rest in
                return tuple(placements)
            found.append((pos, len(needle)))
            cursor = pos + len(needle)
        placements.append(
            tuple(
                CharacterSpan(doc_id, start, end, text[start:end])
                for start, end in (_original(text, norm, pos, length) for pos, length in found)
            )
        )
        first = _find_aligned(norm, needles[0], first + 1)
    return tuple(placements)


def _aligned(offsets: Sequence[int], start: int, end: int) -> bool:
    """True when [start, end) covers whole original characters ("ß" folds to "ss": not half of it)."""
    return (start == 0 or offsets[start - 1] != offsets[start]) and (
        end == len(offsets) or offsets[end] != offsets[end - 1]
    )


def _find_aligned(norm: NormalisedText, needle: str, start: int) -> int:
    pos = norm.text.find(needle, start)
    while pos >= 0 and not _aligned(norm.offsets, pos, pos + len(needle)):
        pos = norm.text.find(needle, pos + 1)
    return pos


def _count_aligned(norm: NormalisedText, needle: str) -> int:
    count = 0
    pos = _find_aligned(norm, needle, 0)
    while pos >= 0:
        count += 1
        pos = _find_aligned(norm, needle, pos + 1)
    return count


def _count_exact(text: str, needle: str) -> int:
    count = 0
    pos = text.find(needle)
    while pos >= 0:
        count += 1
        pos = text.find(needle, pos + 1)
    return count


def explain_miss(text: str, excerpt: str, *, min_chars: int = MIN_EXCERPT_CHARS) -> str:
    """Why ``locate_excerpt`` found nothing, in one sentence a person can act on.

    For a part that is simply not there, names the longest prefix of it that does occur (normalised)
    and where, and what the document says at the point where the two diverge.
    """
    if locate_excerpt(DocumentId(""), text, excerpt, min_chars=min_chars) is not None:
        return "the excerpt is found; nothing to explain"
    parts = split_excerpt(excerpt)
    if not parts:
        return "the excerpt holds no text besides whitespace, punctuation and ellipses"
    norm = normalise(text)
    cursor = 0
    for number, part in enumerate(parts, start=1):
        label = "the excerpt" if len(parts) == 1 else f"part {number} of {len(parts)} {_preview(part)}"
        needle = normalise_excerpt(part)
        if len(needle) < min_chars:
            return (
                f"{label} has {len(needle)} characters once normalised; at least {min_chars} are needed "
                f"to place it unambiguously"
            )
        located = _locate_part(text, part, cursor)
        if located is not None:
            cursor = located[1]
            continue
        if cursor > 0 and _locate_part(text, part, 0) is not None:
            return f"{label} occurs only before offset {cursor}, where the previous part ends: the parts are out of order"
        from_pos = bisect_left(norm.offsets, cursor)
        low, high = 0, len(needle)  # the longest prefix that occurs: occurrence is monotone in length
        while low < high:
            mid = (low + high + 1) // 2
            if norm.text.find(needle[:mid], from_pos) >= 0:
                low = mid
            else:
                high = mid - 1
        if low == 0:
            return f"{label}: not even its first character {needle[0]!r} occurs in the document (normalised)"
        pos = norm.text.find(needle[:low], from_pos)
        start, end = norm.offsets[pos], norm.offsets[pos + low - 1] + 1
        return (
            f"{label} is not in the document, even normalised: its longest prefix that occurs is "
            f"{_preview(needle[:low])} ({low} of {len(needle)} normalised characters, at [{start}:{end}]); "
            f"then the excerpt reads {_preview(needle[low : low + 30])} where the document reads "
            f"{_preview(norm.text[pos + low : pos + low + 30])}"
        )
    return "the parts are each found, but not as one excerpt"


def _preview(text: str, width: int = 40) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")
