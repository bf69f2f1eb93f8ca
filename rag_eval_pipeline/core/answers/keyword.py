"""Keyword correctness: an answer is right (1.0) when every expected keyword occurs in it, else 0.0.

There is no partial credit and no floor: a wrong answer and "I don't know" both score 0, so the metric
cannot be gamed by abstaining. Matching compares whole tokens after normalisation, so formatting does
not decide correctness: "99.95 %" matches "99.95%", "Zoe" matches "Zoë", "night-shift" matches
"night shift". There is no stemming: "Heron" does not match "Herons" (a stemmer is language-bound and
makes "run" match "runner"); put the form the answer should use in the keyword list.
Number formats are not unified either: "1,450" matches "1 450" and "1.450" but not "1450".
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from .types import MetricOutcome

NO_KEYWORDS = "no expected keywords"


def match_tokens(text: str) -> tuple[str, ...]:
    """Decompose (NFKD), drop combining marks, casefold, and split on everything but letters and digits."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
    return tuple("".join(ch if ch.isalnum() else " " for ch in bare).split())


def contains_tokens(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """True when ``needle`` occurs as a contiguous run of whole tokens in ``haystack``."""
    width = len(needle)
    if width == 0:
        return False
    first = needle[0]
    return any(
        haystack[i] == first and tuple(haystack[i : i + width]) == tuple(needle)
        for i in range(len(haystack) - width + 1)
    )


def keyword_outcome(answer: str, keywords: Sequence[str]) -> MetricOutcome:
    """1.0 when all keywords occur in ``answer``; 0.0 with the missing ones listed in the detail.

    A keyword with no letter or digit cannot be matched on tokens: it raises ``ValueError`` (bad
    dataset input, recorded by ``guarded`` as that row's failure) rather than being quietly ignored.
    """
    wanted = list(keywords)
    if not wanted:
        return MetricOutcome.skipped(NO_KEYWORDS)
    answer_tokens = match_tokens(answer)
    missing = []
    for keyword in wanted:
        tokens = match_tokens(keyword)
        if not tokens:
            raise ValueError(f"the expected keyword {keyword!r} has no letter or digit to match")
        if not contains_tokens(answer_tokens, tokens):
            missing.append(keyword)
    if missing:
        return MetricOutcome.ok(0.0, "missing: " + ", ".join(repr(k) for k in missing))
    return MetricOutcome.ok(1.0, f"all {len(wanted)} keywords found")
