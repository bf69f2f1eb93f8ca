"""Cutting only the documents whose chunks are not known yet.

A document's chunks depend on its text and the chunker alone (chunk ids are per document, offsets are
per document), so the chunks of a document that did not change, cut by the same chunker (same
fingerprint), are the chunks cutting it again would give. The ``chunks`` asset keeps them and cuts the
rest: after one document is edited, or a chunk config is applied to one more document, only that
document is cut (and then embedded and indexed: core/retrieval/indexes.py writes only new points).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..corpus.corpus import Corpus
from ..types import PositionAwareChunk
from .base import Chunker, chunk_corpus


@dataclass(frozen=True)
class KnownChunks:
    """The chunks a document had, and the text hash of the document they were cut from."""

    doc_sha256: str
    chunks: tuple[PositionAwareChunk, ...]


@dataclass(frozen=True)
class IncrementalCut:
    chunks: tuple[PositionAwareChunk, ...]  # in the corpus's document order, each document's in order
    cut: tuple[str, ...]  # documents cut now
    reused: tuple[str, ...]  # documents whose known chunks were kept


def cut_reusing(chunker: Chunker, corpus: Corpus, known: Mapping[str, KnownChunks]) -> IncrementalCut:
    """Every document of ``corpus`` cut by ``chunker``, keeping the ``known`` chunks of a document whose
    text hash is the same (``known`` must come from this chunker: the caller checks its fingerprint)."""
    reuse = {d.doc_id for d in corpus if d.doc_id in known and known[d.doc_id].doc_sha256 == d.sha256}
    fresh = chunk_corpus(chunker, [d for d in corpus if d.doc_id not in reuse])
    by_doc: dict[str, list[PositionAwareChunk]] = {}
    for chunk in fresh:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    ordered: list[PositionAwareChunk] = []
    for document in corpus:
        ordered += (
            known[document.doc_id].chunks if document.doc_id in reuse else by_doc.get(document.doc_id, [])
        )
    cut = tuple(d.doc_id for d in corpus if d.doc_id not in reuse)
    return IncrementalCut(tuple(ordered), cut, tuple(d.doc_id for d in corpus if d.doc_id in reuse))


def known_chunks(
    chunks: Sequence[PositionAwareChunk], doc_sha256: Mapping[str, str]
) -> dict[str, KnownChunks]:
    """Stored chunks grouped by document, with the text hash each document had (``doc_sha256``)."""
    grouped: dict[str, list[PositionAwareChunk]] = {}
    for chunk in chunks:
        grouped.setdefault(chunk.doc_id, []).append(chunk)
    return {
        doc: KnownChunks(doc_sha256[doc], tuple(found)) for doc, found in grouped.items() if doc in doc_sha256
    }
