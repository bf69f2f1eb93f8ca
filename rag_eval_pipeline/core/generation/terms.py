"""Word-level text statistics the question generators share: tokens, stopwords, salience and IDF.

Kept dependency-free and deterministic (no NLTK download, no set iteration leaking into results), so a
generator seeded the same way picks the same terms on any machine.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# An alphanumeric run, joined to the next one by '-', '_' or '.' (V-12, kst-prod-eu1, 7.5, e.g,
# dispatch.scans.v2) or, between digits only, by ',' or ':' (1,450 and 22:00), so numbers and
# identifiers stay whole while "end, next" and "rule: x" still split.
TOKEN_PATTERN = re.compile(r"[^\W_]+(?:[-_.][^\W_]+|(?<=\d)[,:]\d+)*")

# A compact English stopword list (function words, auxiliaries, contraction fragments): enough to
# keep "the", "would", "don" out of simulated queries without downloading a corpus.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could couldn d did didn do does doesn doing don down
    during each either else etc even ever every few for from further had hadn has hasn have
    haven having he her here hers herself him himself his how however i if in into is isn it its itself
    just least less let ll m many may me might more most much must mustn my myself neither no nor not
    now o of off on once only or other others otherwise our ours ourselves out over own per
    rather re s same shall shan she should shouldn since so some such t than that the their theirs them
    themselves then there these they this those though through thus to too under until up upon us ve
    very via was wasn we were weren what when where whether which while who whom
    whose why will with within without won would wouldn y yet you your yours yourself yourselves
    """.split()  # noqa: SIM905 (a word list reads better as prose than as 180 quoted items)
)

# Characters skipped when looking back for the start of a sentence: spaces and markdown markers.
_LOOKBACK_SKIP = " \t*_`#>"
# A capitalised word right after one of these starts a sentence or a list item, so it says nothing.
_SENTENCE_OPENERS = ".!?:;|-•(\"'“‘\n\r"


def tokenize(text: str) -> list[str]:
    """Lowercased tokens in order of appearance, stopwords included.

    The text is NFC-composed first: a decomposed "é" (e + combining accent) would otherwise split the
    word, since a combining mark is not a word character for ``re``.
    """
    return [match.group().lower() for match in TOKEN_PATTERN.finditer(unicodedata.normalize("NFC", text))]


def is_content_term(term: str) -> bool:
    """A lowercased token worth querying: not a stopword, and not a lone letter (numbers always count)."""
    if term in STOPWORDS:
        return False
    return len(term) > 1 or term.isdigit()


def content_terms(text: str) -> list[str]:
    """Lowercased tokens without stopwords, in order, repeats kept (so callers can count tf)."""
    return [term for term in tokenize(text) if is_content_term(term)]


def salient_terms(text: str) -> list[str]:
    """Distinct lowercased terms that name something specific, in order of first appearance.

    Salient: any token with a digit (1,450, 22:00, SEV1), an identifier with an inner '-', '_' or '.'
    (V-12, kst-prod-eu1), a token with a capital after its first letter (TLS, SwiftConsumerLagHigh), or
    a capitalised word that does not open a sentence or list item (Heron, Zoë). These are what a user
    who knows the passage would type, and what makes it findable.
    """
    text = unicodedata.normalize("NFC", text)
    seen: dict[str, None] = {}
    for match in TOKEN_PATTERN.finditer(text):
        surface = match.group()
        term = surface.lower()
        if term in seen or not is_content_term(term):
            continue
        if _is_salient_surface(surface) or (
            surface[0].isupper() and not _opens_sentence(text, match.start())
        ):
            seen[term] = None
    return list(seen)


def _is_salient_surface(surface: str) -> bool:
    if any(ch.isdigit() for ch in surface):
        return True
    if any(ch in "-_." for ch in surface):
        return True
    return any(ch.isupper() for ch in surface[1:])


def _opens_sentence(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in _LOOKBACK_SKIP:
        i -= 1
    return i < 0 or text[i] in _SENTENCE_OPENERS


@dataclass(frozen=True)
class TermStatistics:
    """Document and collection frequencies of content terms over a collection of texts.

    ``idf`` is the smoothed form ``ln((1 + N) / (1 + df)) + 1``: always positive, so a term found in
    every text still counts a little, and a term never seen gets the highest weight.
    """

    n_texts: int
    document_frequency: Mapping[str, int] = field(repr=False)
    collection_frequency: Mapping[str, int] = field(repr=False)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> TermStatistics:
        df: Counter[str] = Counter()
        cf: Counter[str] = Counter()
        n = 0
        for text in texts:
            n += 1
            terms = content_terms(text)
            cf.update(terms)
            df.update(dict.fromkeys(terms, 1))
        return cls(n, dict(df), dict(cf))

    @property
    def total_terms(self) -> int:
        return sum(self.collection_frequency.values())

    def idf(self, term: str) -> float:
        return math.log((1 + self.n_texts) / (1 + self.document_frequency.get(term, 0))) + 1.0

    def vocabulary(self) -> list[str]:
        """Every content term, sorted, so sampling from it does not depend on insertion order."""
        return sorted(self.collection_frequency)


@functools.cache
def stem(term: str) -> str:
    """The Snowball English stem of a lowercased term: what the keyword index (core/retrieval/keyword.py)
    matches on, so two forms of a word with one stem are the same word to it."""
    with _stemmer_lock:  # PyStemmer objects are not thread-safe
        return str(_stemmer().stemWord(term))


@functools.cache
def _stemmer() -> Any:
    import Stemmer  # PyStemmer, imported on first use (as the keyword index does)

    return Stemmer.Stemmer("english")


_stemmer_lock = threading.Lock()


def document_frequencies(texts: Iterable[str]) -> dict[str, int]:
    """In how many of ``texts`` each content term occurs."""
    return dict(TermStatistics.from_texts(texts).document_frequency)
