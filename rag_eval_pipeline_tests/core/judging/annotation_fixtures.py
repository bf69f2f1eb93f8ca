"""A tiny judging workspace for the annotation tests: three documents (one with characters outside the
Basic Multilingual Plane, which a browser counts as two UTF-16 units), two pooled queries and one
query without a pool."""

from __future__ import annotations

from pathlib import Path

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.types import ImportedQuery, PooledPassage, QueryId, query_id_for
from rag_eval_pipeline.core.types import CharacterSpan, Document, DocumentId

PUMPS = DocumentId("alpha/pumps.md")
STAFF = DocumentId("beta/staff.md")
NOTES = DocumentId("gamma/notes.md")
DOCS = {
    PUMPS: (
        "# Pumps\n\nThe main pump runs at 1,450 rpm and is serviced every 90 days.\n\n"
        "## Alarms\n\nA pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.\n"
    ),
    STAFF: (
        "# Staff 🚀 rota\n\nZoë Mbeki 👩‍🔧 leads the night shift. Night shift starts at 22:00 and ends at 06:00.\n\n"
        "- Day shift lead: Tomasz Wiśniewski\n- Maintenance lead: Amélie Durand\n"
    ),
    NOTES: "Unrelated notes about the canteen menu on Fridays.\n",
}
PUMP_QUERY = "How fast does the main pump run?"
NIGHT_QUERY = "When does the night shift start?"
UNPOOLED_QUERY = "Who repairs the valves?"
PUMP_ID = query_id_for(PUMP_QUERY)
NIGHT_ID = query_id_for(NIGHT_QUERY)


def corpus() -> Corpus:
    return Corpus(tuple(Document(doc_id, text) for doc_id, text in DOCS.items()))


def span_of(doc_id: DocumentId, text: str) -> CharacterSpan:
    start = DOCS[doc_id].index(text)
    return CharacterSpan(doc_id, start, start + len(text), text)


def passage(
    query_id: QueryId, doc_id: DocumentId, text: str, found_by: str = "fixed-200 x dense #1"
) -> PooledPassage:
    return PooledPassage(query_id, span_of(doc_id, text), corpus()[doc_id].sha256, (found_by,))


PUMP_LINE = "The main pump runs at 1,450 rpm and is serviced every 90 days."
ALARM_LINE = "A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds."
NIGHT_LINE = "Zoë Mbeki 👩‍🔧 leads the night shift. Night shift starts at 22:00 and ends at 06:00."


def pool() -> list[PooledPassage]:
    return [
        passage(PUMP_ID, PUMPS, ALARM_LINE, "bm25 #2"),
        passage(PUMP_ID, PUMPS, PUMP_LINE, "bm25 #1"),
        passage(NIGHT_ID, STAFF, NIGHT_LINE),
        passage(NIGHT_ID, NOTES, "Unrelated notes about the canteen menu on Fridays."),
    ]


def queries() -> list[ImportedQuery]:
    return [
        ImportedQuery(PUMP_ID, PUMP_QUERY, 3),
        ImportedQuery(query_id_for(UNPOOLED_QUERY), UNPOOLED_QUERY),
        ImportedQuery(NIGHT_ID, NIGHT_QUERY),
    ]


def write_judging_files(folder: Path) -> JudgingStore:
    """queries.jsonl and pool.jsonl as the import and the pooling write them."""
    store = JudgingStore(folder)
    store.write_queries(queries())
    store.write_pool(pool())
    return store


def write_corpus(folder: Path) -> Path:
    for doc_id, text in DOCS.items():
        path = folder / doc_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder
