"""Sentence spans for the semantic chunker: cut by offsets, never by re-joining strings."""

from __future__ import annotations

import re

# A run of . ! ? followed by whitespace or the end (so "3.14" and "e.g.x" stay whole), or a newline
# run; trailing whitespace goes with the sentence it follows so the spans tile the text.
_SENTENCE_END = re.compile(r"[.!?]+(?:\s+|$)|\n\s*")


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Spans tiling ``text[start:end]``; a blank leading span is folded into the next sentence."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.end() > cursor:
            spans.append((cursor, match.end()))
            cursor = match.end()
    if cursor < end:
        spans.append((cursor, end))
    if len(spans) > 1 and not text[spans[0][0] : spans[0][1]].strip():
        spans[:2] = [(spans[0][0], spans[1][1])]
    return spans
