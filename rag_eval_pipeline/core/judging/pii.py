"""Personal data and secrets in imported queries: the one owner of the patterns, found before anything
is stored.

Users paste into a search box what they should not: their e-mail address, a phone number, an API key.
A query log is then personal data, and our judging files are committed with the documents. So every
text read by ``rag-eval queries import`` goes through ``find_pii`` first; the import refuses to store a
flagged query unless told to redact it (``redact_pii``) or to keep it as is.

What is flagged (the kind, and the marker that replaces it when redacted):

- ``e-mail`` ``[e-mail]``: ``name@domain.tld``;
- ``card-number`` ``[card-number]``: 13 to 19 digits, alone or in groups split by spaces or dashes,
  that pass the Luhn check (the check every payment card number carries);
- ``phone`` ``[phone]``: 9 to 15 digits written as a phone number: a leading ``+``, or groups split
  by spaces, dots, dashes or parentheses, or one run of 10 to 15 bare digits; not a date
  (2026-12-02), not a dotted IPv4 address or version (10.0.0.12, 1.2.3.4), not a card number;
- ``key`` ``[key]``: API keys and tokens by their published prefixes (OpenAI ``sk-``, LangSmith
  ``lsv2_``, GitHub ``ghp_``/``github_pat_``, AWS ``AKIA``, Slack ``xox?-``, Google ``AIza``), JSON web
  tokens (``eyJ...``.``...``.``...``), ``Bearer`` tokens, 32+ hex digits (a secret or a hash: a
  40-digit commit id is flagged too, a false alarm one accepts), 32+ characters of base64 mixing upper
  case, lower case and digits; and any secret configured in the environment (core/redaction.py knows
  which).

Not found: names, postal addresses, account numbers in other shapes; a person must still look. The
patterns lean towards flagging: a false alarm costs one ``--allow-pii``, a miss puts someone's data in
a repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..redaction import secret_runs

PiiKind = Literal["e-mail", "card-number", "phone", "key"]
PII_KINDS: tuple[PiiKind, ...] = ("e-mail", "card-number", "phone", "key")


@dataclass(frozen=True)
class PiiMatch:
    kind: PiiKind
    start: int
    end: int

    @property
    def marker(self) -> str:
        return f"[{self.kind}]"


_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# a run of digits with single separators between them, not glued to a word or a longer number
_DIGIT_RUN = re.compile(r"(?<![\w+])\+?\(?\d(?:[ .()-]{0,2}\d){6,}\)?(?![\w])")
_KEYS = re.compile(
    "|".join(
        (
            r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}",  # OpenAI (sk-..., sk-proj-...)
            r"\blsv2_(?:pt|sk)_[0-9a-fA-F]{16,}(?:_[0-9a-fA-F]+)?",  # LangSmith
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
            r"\bAIza[0-9A-Za-z_-]{30,}",  # Google API key
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JSON web token
            r"(?i:\bbearer)\s+[A-Za-z0-9._~+/-]{16,}=*",
            r"(?<![0-9A-Za-z])[0-9a-fA-F]{32,}(?![0-9A-Za-z])",  # long hex: a secret or a hash
        )
    )
)
_BASE64ISH = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/_-])")
_IPV4_OR_VERSION = re.compile(r"\d{1,3}(?:\.\d{1,3}){2,3}")
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}")


def find_pii(text: str) -> tuple[PiiMatch, ...]:
    """Every personal or secret string in ``text``, by position; overlaps resolved to the first (then
    longest) match, so each character belongs to one match at most."""
    found = sorted(_matches(text), key=lambda m: (m.start, -m.end, PII_KINDS.index(m.kind)))
    kept: list[PiiMatch] = []
    for match in found:
        if kept and match.start < kept[-1].end:
            continue
        kept.append(match)
    return tuple(kept)


def pii_kinds(text: str) -> tuple[PiiKind, ...]:
    """The kinds of personal data ``text`` seems to hold, in ``PII_KINDS`` order (empty: none)."""
    kinds = {m.kind for m in find_pii(text)}
    return tuple(k for k in PII_KINDS if k in kinds)


def redact_pii(text: str) -> str:
    """``text`` with every match of ``find_pii`` replaced by its marker (``[e-mail]``, ...): also what
    is printed of a flagged query, so the data itself never reaches the terminal."""
    pieces: list[str] = []
    last = 0
    for match in find_pii(text):
        pieces += [text[last : match.start], match.marker]
        last = match.end
    return "".join(pieces) + text[last:]


def _matches(text: str) -> Iterator[PiiMatch]:
    for m in _EMAIL.finditer(text):
        yield PiiMatch("e-mail", m.start(), m.end())
    for m in _KEYS.finditer(text):
        yield PiiMatch("key", m.start(), m.end())
    for m in _BASE64ISH.finditer(text):
        token = m.group()
        if (
            any(c.isupper() for c in token)
            and any(c.islower() for c in token)
            and any(c.isdigit() for c in token)
        ):
            yield PiiMatch("key", m.start(), m.end())
    for m in _DIGIT_RUN.finditer(text):
        kind = _number_kind(m.group())
        if kind is not None:
            yield PiiMatch(kind, m.start(), m.end())
    yield from _configured_secrets(text)


def _number_kind(run: str) -> PiiKind | None:
    digits = "".join(c for c in run if c.isdigit())
    bare = run.lstrip("+(").rstrip(")")
    if _DATE.fullmatch(bare) or _IPV4_OR_VERSION.fullmatch(bare):
        return None
    groups = re.split(r"[ -]", bare)
    if 13 <= len(digits) <= 19 and all(g.isdigit() for g in groups) and _luhn(digits):
        return "card-number"
    if not 9 <= len(digits) <= 15:
        return None
    if run.startswith("+") or not run.isdigit() or len(digits) >= 10:
        return "phone"
    return None  # 9 bare digits: an order or ticket number as often as a phone number


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _configured_secrets(text: str) -> Iterator[PiiMatch]:
    """The secrets of the environment (OPENAI_API_KEY, ...) in ``text``, as core/redaction.py finds
    them (a whole value or 8+ characters of one)."""
    for start, end in secret_runs(text):
        yield PiiMatch("key", start, end)
