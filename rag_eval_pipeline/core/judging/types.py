"""The vocabulary of judging real queries: a query as users asked it, a passage pooled for it, and a
judgement stored as character spans in the documents.

A judgement is about text, not chunks: the spans that answer a query and the ranges the judge read
are (doc_id, start, end) in the documents as loaded, with the sha256 of each document version they
were read in. So one judgement serves every chunker, and a new chunk config only needs the text that
no judge has read yet (core/judging/pool.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NewType

from ..types import CharacterSpan, DocumentId, sha256_hex

QueryId = NewType("QueryId", str)
JudgeName = NewType("JudgeName", str)

# What a judge said about a query after reading its pool:
# - answers: the selected spans answer it (at least one span);
# - answered-elsewhere: the documents answer it, but not in the passages shown;
# - not-answerable: these documents do not answer it;
# - unclear: the query cannot be judged as asked.
Verdict = Literal["answers", "answered-elsewhere", "not-answerable", "unclear"]
VERDICTS: tuple[Verdict, ...] = ("answers", "answered-elsewhere", "not-answerable", "unclear")
JudgeKind = Literal["human", "llm"]
JUDGE_KINDS: tuple[JudgeKind, ...] = ("human", "llm")
# Graded relevance of a passage, as UMBRELA (and TREC's deep-learning tracks) grade it: 0 nothing to do
# with the query, 1 related but does not answer, 2 partly answers, 3 answers it fully.
Grade = Literal[0, 1, 2, 3]
GRADES: tuple[Grade, ...] = (0, 1, 2, 3)
RELEVANT_GRADE = 2  # a passage graded at least this is relevant (binary relevance for kappa)


def query_id_for(text: str) -> QueryId:
    """``q-`` + sha256[:12] of the query's normalised text (case and whitespace folded): the same
    query imported twice, from any file, is one query."""
    return QueryId("q-" + sha256_hex(" ".join(text.casefold().split()))[:12])


@dataclass(frozen=True)
class ImportedQuery:
    """A query users asked, with how often: ``count`` is its traffic (the weight of traffic-weighted
    metrics), the counts of every duplicate and near-duplicate merged into it added up."""

    query_id: QueryId
    text: str
    count: int = 1
    variants: tuple[str, ...] = ()  # the other texts merged into this one (near-duplicates)
    sources: tuple[str, ...] = ()  # where it was read: "file:line" of each occurrence (first few)
    pii: tuple[str, ...] = ()  # kinds of personal data the text seems to hold ("e-mail", "phone", "key")

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError(f"query {self.query_id} has no text")
        if self.count < 1:
            raise ValueError(f"query {self.query_id} has count {self.count}; a query was asked at least once")


@dataclass(frozen=True)
class PooledPassage:
    """A range of a document to judge for a query: what some retrieval run put in its top N, the
    ranges of every run merged so that no character is shown twice."""

    query_id: QueryId
    span: CharacterSpan
    document_sha256: str  # the document version the range was cut from
    found_by: tuple[str, ...]  # the runs that retrieved it, "<run> #<rank>" (best rank per run)


@dataclass(frozen=True)
class Judgement:
    """One judge's verdict on one query, over the text it read.

    ``read`` is every range the judge was shown and read (the pooled passages; for the LLM judge, the
    one passage it graded); ``spans`` the text in them that answers the query (empty unless the verdict
    is ``answers``). A range read with no span in it is judged not relevant. ``grade`` is the LLM
    judge's graded relevance of its passage (None for a person). ``documents`` maps every document of
    ``read`` to the sha256 of the version it was read in, so a judgement is re-anchored when its
    documents change (core/questions/reanchor.py), as golden spans are."""

    query_id: QueryId
    judge: JudgeName
    kind: JudgeKind
    verdict: Verdict
    spans: tuple[CharacterSpan, ...]
    read: tuple[CharacterSpan, ...]
    judged_at: str  # ISO 8601, UTC
    documents: Mapping[DocumentId, str] = field(default_factory=dict)
    grade: Grade | None = None
    note: str = ""  # the LLM judge's quoted excerpt or a person's remark

    def __post_init__(self) -> None:
        if self.verdict == "answers" and not self.spans:
            raise ValueError(
                f"judgement of {self.query_id} by {self.judge}: 'answers' needs at least one span"
            )
        if self.verdict != "answers" and self.spans:
            raise ValueError(f"judgement of {self.query_id} by {self.judge}: only 'answers' selects spans")
