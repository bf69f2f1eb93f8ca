"""A tiny corpus and builders of judgements over it, shared by the judging tests."""

from __future__ import annotations

from collections.abc import Sequence

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.judging.pool import Hit, PoolRun
from rag_eval_pipeline.core.judging.types import Grade, Judgement, JudgeName, QueryId, Verdict
from rag_eval_pipeline.core.types import CharacterSpan, Document, DocumentId

A = DocumentId("a.md")
B = DocumentId("b.md")
TEXTS = {
    A: "Deploys happen on Tuesdays. Rollbacks need two approvals. The on-call engineer pages the lead.",
    B: "Backups run nightly at 02:00. Restores are tested every quarter by the storage team.",
}
Q1, Q2, Q3 = QueryId("q-1"), QueryId("q-2"), QueryId("q-3")


def corpus(texts: dict[DocumentId, str] | None = None) -> Corpus:
    return Corpus(tuple(Document(d, t) for d, t in (texts or TEXTS).items()))


def span(doc: DocumentId, start: int, end: int, texts: dict[DocumentId, str] | None = None) -> CharacterSpan:
    return CharacterSpan(doc, start, end, (texts or TEXTS)[doc][start:end])


def find(doc: DocumentId, text: str) -> CharacterSpan:
    start = TEXTS[doc].index(text)
    return span(doc, start, start + len(text))


def judgement(
    query: QueryId,
    judge: str,
    read: Sequence[CharacterSpan],
    spans: Sequence[CharacterSpan] = (),
    *,
    kind: str = "human",
    verdict: Verdict | None = None,
    grade: Grade | None = None,
    at: str = "2026-12-02T10:00:00Z",
    texts: dict[DocumentId, str] | None = None,
) -> Judgement:
    documents = corpus(texts)
    return Judgement(
        query,
        JudgeName(judge),
        kind,  # type: ignore[arg-type]
        verdict or ("answers" if spans else "not-answerable"),
        tuple(spans),
        tuple(read),
        at,
        {s.doc_id: documents[s.doc_id].sha256 for s in (*read, *spans)},
        grade,
    )


def run(name: str, hits: dict[QueryId, list[tuple[DocumentId, int, int]]]) -> PoolRun:
    """A run whose hits are ranked in the order listed."""
    return PoolRun(
        name,
        {
            q: [Hit(d, s, e, rank) for rank, (d, s, e) in enumerate(found, start=1)]
            for q, found in hits.items()
        },
    )
