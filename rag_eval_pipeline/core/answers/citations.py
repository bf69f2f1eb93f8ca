"""Reading an answering model's reply: its chunk citations, its confidence line and whether it abstained.

Citations are chunk ids in square brackets, as the answer prompt asks: ``[chunk_0123456789ab]``, with
several ids as ``[a, b]``, ``[a; b]`` or ``[a][b]``, whitespace tolerated. A bracket counts as a citation
when it holds a retrieved id or something shaped like one of our ids (``chunk_``/``pa_chunk_`` + hex), so
``[1]`` or a Markdown link text is not mistaken for one, while an invented ``[chunk_0123abcd]`` is kept
as an invalid citation rather than ignored.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from ..types import ChunkId, QuestionId
from .types import Answer, Confidence

# One bracket group, without nested brackets; long groups are prose, not citations.
_BRACKET = re.compile(r"\[([^\[\]\n]{1,400})\]")
_ID_SHAPED = re.compile(r"(?:pa_)?chunk_[0-9a-fA-F]+")
_ID_SEPARATORS = re.compile(r"[,;\s]+")
_TOKEN_DECORATION = "`'\"*.:()"

# The reply's last line "Confidence: HIGH" (Markdown emphasis and a full stop tolerated); also found at
# the end of a line of text, since models often append it to their last sentence.
_CONFIDENCE = re.compile(
    r"[ \t]*(?<![A-Za-z0-9])[*_]*confidence(?:[ \t]+level)?[*_]*[ \t]*[:=\-][ \t]*[*_]*[ \t]*(high|medium|low)\b[*_.!]*[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)

# What an answer says when it does not answer, matched case-insensitively on word boundaries (curly
# apostrophes read as straight ones). Deliberately short: each phrase is a refusal in itself.
ABSTENTION_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i dont know",
    "does not contain",
    "do not contain",
    "doesn't contain",
    "not enough information",
    "insufficient information",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "no information",
)
_ABSTENTION = re.compile(
    r"\b(?:" + "|".join(re.escape(p) for p in ABSTENTION_PHRASES) + r")\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Citations:
    """Cited ids in order of first citation, each once: retrieved ones and the others."""

    valid: tuple[ChunkId, ...]
    invalid: tuple[str, ...]


def find_citations(text: str, retrieved_ids: Collection[str]) -> Citations:
    retrieved = set(retrieved_ids)
    valid: dict[ChunkId, None] = {}
    invalid: dict[str, None] = {}
    for match in _BRACKET.finditer(text):
        inside = match.group(1).strip()
        if inside in retrieved:  # an id of another shape (imported chunks), cited alone
            valid.setdefault(ChunkId(inside), None)
            continue
        for token in (t.strip(_TOKEN_DECORATION) for t in _ID_SEPARATORS.split(inside)):
            if token in retrieved:
                valid.setdefault(ChunkId(token), None)
            elif _ID_SHAPED.fullmatch(token):
                invalid.setdefault(token, None)
    return Citations(tuple(valid), tuple(invalid))


def split_confidence(reply: str) -> tuple[str, Confidence | None]:
    """The reply without its confidence statement(s), and the last one stated (None when absent)."""
    matches = list(_CONFIDENCE.finditer(reply))
    if not matches:
        return reply.strip(), None
    level = matches[-1].group(1).upper()
    confidence: Confidence = "HIGH" if level == "HIGH" else "MEDIUM" if level == "MEDIUM" else "LOW"
    return _CONFIDENCE.sub("", reply).strip(), confidence


def says_it_does_not_know(text: str) -> bool:
    return _ABSTENTION.search(text.replace("\u2019", "'").replace("\u2018", "'")) is not None


def parse_answer(
    question_id: QuestionId, reply: str, retrieved_ids: Collection[str], answerer: str
) -> Answer:
    """An ``Answer`` from a model's reply. The text keeps its citations (a judge checks them) and loses
    only the confidence line."""
    text, confidence = split_confidence(reply)
    citations = find_citations(text, retrieved_ids)
    return Answer(
        question_id=question_id,
        text=text,
        cited_chunk_ids=citations.valid,
        invalid_citations=citations.invalid,
        confidence=confidence,
        abstained=says_it_does_not_know(text),
        answerer=answerer,
    )
