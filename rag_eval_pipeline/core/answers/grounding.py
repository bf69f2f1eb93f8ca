"""Is an answer grounded in the chunks it cites, and do those chunks agree? Cheap checks, no LLM.

Grounding is term overlap (stemmed content terms), so it is exact and free but blind to paraphrase with
other words. Agreement compares sentence embeddings, so it sees paraphrase but not a changed number:
with MiniLM "runs at 1,450 rpm" and "runs at 900 rpm" have a cosine of about 0.92 and count as the
same value, while a different name ("Zoë Mbeki leads" vs "Tomasz Wiśniewski leads", about 0.50) does
not. And a source's value is its sentence closest to the question, which may be a topical sentence
without the answer ("Night shift starts at 22:00." beats "Zoë Mbeki leads the night shift." for "Who
leads the night shift?"). Treat agreement as a signal about topic and entities, not about figures.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import Stemmer

from ..generation.terms import content_terms
from ..types import ChunkId, RetrievedChunk
from .types import Answer, MetricOutcome

SemanticVerdict = Literal["pass", "fail", "skipped", "failed"]
AgreementPattern = Literal["unanimous", "majority", "mixed", "conflicting"]

# A claim is validated when at least this share of its content terms occurs in the cited text ...
CLAIM_TERM_SHARE = 0.5
# ... and the answer passes when at least this share of its claims is validated.
SEMANTIC_PASS_RATE = 0.5
# Two source values are the same value when their sentence embeddings have at least this cosine.
SAME_VALUE_COSINE = 0.75

# A citation is a bracket holding ids only ("[pa_chunk_1a2b]", "[a, b]"); "[see the manual]" is prose.
_CITATION = re.compile(r"\[\s*[\w.:/-]+(?:\s*[,;]\s*[\w.:/-]+)*\s*\]")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
_MARKDOWN_LEAD = re.compile(r"^\s*(?:[-*+•>]|\d+[.)])\s+")

_stemmer = Stemmer.Stemmer("english")
_stemmer_lock = threading.Lock()  # PyStemmer objects are not thread-safe


@functools.lru_cache(maxsize=8192)
def content_stems(text: str) -> frozenset[str]:
    """The distinct stemmed content terms of ``text``: lowercased, stopwords dropped, Snowball-stemmed
    (the stemmer the BM25 index uses), so "runs" in an answer matches "run" in a chunk. Remembered per
    text: the same chunks come back for many questions and profiles (8,235 calls in a demo run)."""
    terms = content_terms(text)
    with _stemmer_lock:
        return frozenset(_stemmer.stemWords(terms))


def strip_citations(text: str) -> str:
    return _CITATION.sub("", text)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split at line breaks and after '.', '!' or '?' followed by a space.

    Markdown headings are dropped (a heading names a topic, it claims nothing) and list markers are
    removed. Abbreviations such as "e.g. " split a sentence; for term overlap that costs nothing.
    """
    sentences: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = _MARKDOWN_LEAD.sub("", line)
        sentences += [s.strip() for s in _SENTENCE_BREAK.split(line) if s.strip()]
    return sentences


def unanswered_reason(answer: Answer) -> str | None:
    """Why an answer makes no claim to evaluate (failed, not built or abstained), or None when it does."""
    if answer.status == "skipped":
        return f"no answer: {answer.error or 'answers were not built'}"
    if answer.status == "failed":
        return f"no answer: answer generation failed ({answer.error or 'no error recorded'})"
    if answer.abstained:
        return "the answer abstained"
    return None


def cited_hits(answer: Answer, hits: Sequence[RetrievedChunk]) -> list[RetrievedChunk]:
    """The retrieved chunks the answer cites, in rank order (ties by chunk id).

    Raises ``ValueError`` when a cited id is not among the hits: the answer and the retrieval results
    it was built from do not belong together, and no metric should guess.
    """
    by_id = {h.chunk_id: h for h in hits}
    missing = [c for c in answer.cited_chunk_ids if c not in by_id]
    if missing:
        raise ValueError(
            f"question {answer.question_id}: cited chunk(s) {missing} are not among its "
            f"{len(hits)} retrieved chunks; were the answers built from another retrieval run?"
        )
    return sorted({by_id[c] for c in answer.cited_chunk_ids}, key=lambda h: (h.rank, h.chunk_id))


def semantic_validation(
    answer: Answer,
    hits: Sequence[RetrievedChunk],
    *,
    claim_term_share: float = CLAIM_TERM_SHARE,
    pass_rate: float = SEMANTIC_PASS_RATE,
) -> MetricOutcome:
    """The share of the answer's claims grounded in the text of the chunks it cites (value), with the
    verdict ("pass" when the share is >= ``pass_rate``) at the start of the detail.

    Claims are the answer's sentences with citations removed; a claim without content terms ("See
    below.") is not a claim and is not counted. A claim is validated when at least
    ``claim_term_share`` of its distinct stemmed content terms occur in the cited chunks' text.
    Skipped when the answer failed, abstained, cites nothing, or has no content terms.
    """
    reason = unanswered_reason(answer)
    if reason is not None:
        return MetricOutcome.skipped(reason)
    if not answer.cited_chunk_ids:
        return MetricOutcome.skipped("the answer cites no retrieved chunk")
    source: frozenset[str] = frozenset().union(*(content_stems(h.text) for h in cited_hits(answer, hits)))
    claims = [stems for s in split_sentences(strip_citations(answer.text)) if (stems := content_stems(s))]
    if not claims:
        return MetricOutcome.skipped("the answer has no content terms")
    validated = sum(len(claim & source) / len(claim) >= claim_term_share for claim in claims)
    rate = validated / len(claims)
    verdict = "pass" if rate >= pass_rate else "fail"
    return MetricOutcome.ok(
        rate, f"{verdict}: {validated} of {len(claims)} claims grounded in the cited text"
    )


def semantic_verdict(outcome: MetricOutcome, pass_rate: float = SEMANTIC_PASS_RATE) -> SemanticVerdict:
    if outcome.status != "ok" or outcome.value is None:
        return "failed" if outcome.status == "failed" else "skipped"
    return "pass" if outcome.value >= pass_rate else "fail"


def agreement_pattern(agreement: float) -> AgreementPattern:
    """unanimous > 0.95, majority > 0.7, mixed > 0.4, else conflicting (every bound exclusive)."""
    if agreement > 0.95:
        return "unanimous"
    if agreement > 0.7:
        return "majority"
    if agreement > 0.4:
        return "mixed"
    return "conflicting"


@dataclass(frozen=True)
class AgreementSources:
    """What one row's agreement needs embedded: the question and each cited chunk's candidate
    sentences (chunks in rank order)."""

    question: str
    chunk_ids: tuple[ChunkId, ...]
    sentences: tuple[tuple[str, ...], ...]

    def texts(self) -> list[str]:
        return [self.question, *(s for group in self.sentences for s in group)]


@dataclass(frozen=True)
class SourceAgreement:
    agreement: float
    pattern: AgreementPattern
    n_sources: int
    unique_values: int  # how many distinct values (groups) the sources gave
    values: tuple[str, ...]  # each source's value: its sentence most similar to the question

    def outcome(self) -> MetricOutcome:
        return MetricOutcome.ok(
            self.agreement,
            f"{self.pattern}: {self.n_sources} sources gave {self.unique_values} distinct value(s)",
        )


def agreement_sources(
    question: str, answer: Answer, hits: Sequence[RetrievedChunk]
) -> AgreementSources | MetricOutcome:
    """The sources of a row's agreement, or the skipped outcome saying why there are none.

    The sources are the cited chunks: they are what the answer's claims rest on. A chunk without a
    sentence (a heading only) offers its whole text as its one candidate; a chunk with no text at all
    cannot be a source.
    """
    reason = unanswered_reason(answer)
    if reason is not None:
        return MetricOutcome.skipped(reason)
    ids: list[ChunkId] = []
    sentences: list[tuple[str, ...]] = []
    for hit in cited_hits(answer, hits):
        candidates = tuple(split_sentences(hit.text)) or ((hit.text.strip(),) if hit.text.strip() else ())
        if candidates:
            ids.append(hit.chunk_id)
            sentences.append(candidates)
    if len(ids) < 2:
        return MetricOutcome.skipped("fewer than two cited sources")
    return AgreementSources(question, tuple(ids), tuple(sentences))


Vector = npt.NDArray[np.float32]


def source_agreement(
    sources: AgreementSources, vectors: Mapping[str, Vector], same_value: float = SAME_VALUE_COSINE
) -> SourceAgreement:
    """How far the cited sources give the same answer to the question.

    Each source's value is its sentence most similar to the question (cosine of the L2-normalised
    embeddings; ties go to the earlier sentence). Values are grouped greedily in rank order: a value
    joins the first group whose first member has cosine >= ``same_value`` with it, else starts a group.
    agreement = size of the largest group / number of sources.
    """
    question = vectors[sources.question]
    values: list[str] = []
    for candidates in sources.sentences:
        similarities = [float(vectors[s] @ question) for s in candidates]
        values.append(candidates[int(np.argmax(similarities))])
    groups: list[list[str]] = []
    for value in values:
        for group in groups:
            if float(vectors[group[0]] @ vectors[value]) >= same_value:
                group.append(value)
                break
        else:
            groups.append([value])
    agreement = max(len(g) for g in groups) / len(values)
    return SourceAgreement(agreement, agreement_pattern(agreement), len(values), len(groups), tuple(values))
