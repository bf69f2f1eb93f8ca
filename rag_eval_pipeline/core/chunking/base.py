"""The chunker contract: cut a document and report exactly where each piece came from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..types import Document, PositionAwareChunk, assign_chunk_ids, sha256_hex


@runtime_checkable
class Chunker(Protocol):
    @property
    def fingerprint(self) -> str:
        """Changes whenever the chunks could change (kind and settings); chunk-level ground truth
        records it so an evaluation can refuse a different chunker."""
        ...

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        """Chunks in document order with offsets recorded while cutting, never searched for."""
        ...


def chunks_from_spans(document: Document, spans: Iterable[tuple[int, int]]) -> list[PositionAwareChunk]:
    """Turn (start, end) cut positions into chunks with ``pa_chunk_`` ids.

    Every chunker's chunks pass here, so this is where a span with no text is dropped: an empty one,
    and one of whitespace only (a blank line left between two pieces too long to merge with it, a
    window of spaces), which would be embedded, indexed and retrieved as a passage that says nothing
    and lowers precision omega. LangChain's and Chroma's splitters strip such chunks away too. The
    other chunks keep their exact offsets, so the dropped whitespace belongs to no chunk.
    """
    kept = [(s, e) for s, e in spans if e > s and not document.text[s:e].isspace()]
    texts = [document.text[s:e] for s, e in kept]
    ids = assign_chunk_ids("pa_chunk_", document.doc_id, texts)
    return [
        PositionAwareChunk(chunk_id, document.doc_id, s, e, text)
        for chunk_id, (s, e), text in zip(ids, kept, texts, strict=True)
    ]


@runtime_checkable
class CorpusChunker(Chunker, Protocol):
    """A chunker that cuts many documents at once better than one by one (the semantic chunker embeds
    the sentences of every document in one call); the chunks are the same as one by one."""

    def chunk_documents(self, documents: Sequence[Document]) -> list[PositionAwareChunk]: ...


def chunk_corpus(chunker: Chunker, documents: Iterable[Document]) -> list[PositionAwareChunk]:
    if isinstance(chunker, CorpusChunker):
        return chunker.chunk_documents(list(documents))
    return [chunk for doc in documents for chunk in chunker.chunk_document(doc)]


@dataclass(frozen=True)
class ChunkSet:
    """A corpus cut by one chunker: what an evaluation indexes, retrieves from and scores against.
    ``name`` labels its vector collection and the points in it: the chunk config's name in the pipeline,
    ``chunker-<hash of the fingerprint>`` for a bare chunker (a notebook)."""

    name: str
    chunks: tuple[PositionAwareChunk, ...]


def cut_corpus(chunker: Chunker, documents: Iterable[Document], name: str | None = None) -> ChunkSet:
    """Step 1 of an evaluation (the notebook API and the ``chunks`` asset both call it)."""
    label = name if name is not None else "chunker-" + sha256_hex(chunker.fingerprint)[:10]
    return ChunkSet(label, tuple(chunk_corpus(chunker, documents)))
