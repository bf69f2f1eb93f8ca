"""Semantic chunking: group neighbouring sentences until the topic shifts, judged by embeddings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..embedding.base import Embedder
from ..embedding.prefetch import PrefetchEmbedder
from ..settings.configs import DEFAULT_SEPARATORS
from ..types import Document, PositionAwareChunk
from .base import chunks_from_spans
from .recursive import RecursiveCharacterChunker
from .sentences import sentence_spans
from .settings import settings_fingerprint

Span = tuple[int, int]


class SemanticChunker:
    """Breaks where the cosine distance between neighbouring sentences exceeds the document's
    ``breakpoint_percentile``; groups over ``max_chunk_size`` characters are re-cut recursively."""

    def __init__(
        self,
        embedder: Embedder,
        max_chunk_size: int,
        breakpoint_percentile: float = 90.0,
        separators: Sequence[str] = DEFAULT_SEPARATORS,
        *,
        config_hash: str = "",
    ) -> None:
        if not 0 < breakpoint_percentile < 100:
            raise ValueError(f"breakpoint_percentile must lie in (0, 100), got {breakpoint_percentile}")
        self.embedder = embedder
        self.max_chunk_size = max_chunk_size
        self.breakpoint_percentile = breakpoint_percentile
        self._recut = RecursiveCharacterChunker(max_chunk_size, 0, separators)
        self._fingerprint = settings_fingerprint(
            "semantic",
            {
                "embedder": embedder.model_id,
                "max_chunk_size": max_chunk_size,
                "breakpoint_percentile": breakpoint_percentile,
                "separators": list(self._recut.separators),
                "config_hash": config_hash,
            },
        )

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def chunk_document(self, document: Document) -> list[PositionAwareChunk]:
        return self._chunk(document, self.embedder)

    def chunk_documents(self, documents: Sequence[Document]) -> list[PositionAwareChunk]:
        """The chunks of every document, as ``chunk_document`` cuts them, with the sentences of all
        documents embedded in one call (``chunk_corpus`` uses this)."""
        sentences = [doc.text[s:e] for doc in documents for s, e in _embedded_sentences(doc.text)]
        embedder = PrefetchEmbedder(self.embedder, sentences)
        return [chunk for doc in documents for chunk in self._chunk(doc, embedder)]

    def _chunk(self, document: Document, embedder: Embedder) -> list[PositionAwareChunk]:
        text = document.text
        spans: list[Span] = []
        for start, end in self._groups(text, embedder):
            if end - start > self.max_chunk_size:
                spans.extend(self._recut.split_spans(text, start, end))
            else:
                spans.append((start, end))
        return chunks_from_spans(document, spans)

    def _groups(self, text: str, embedder: Embedder) -> list[Span]:
        sentences = sentence_spans(text)
        if len(sentences) < 2:
            return sentences
        vectors = np.asarray(embedder.embed([text[s:e] for s, e in sentences]), dtype=np.float64)
        distances = _neighbour_distances(vectors)
        threshold = np.percentile(distances, self.breakpoint_percentile)
        groups: list[Span] = []
        group_start = sentences[0][0]
        for (_, end), distance in zip(sentences[:-1], distances, strict=True):
            if distance > threshold:
                groups.append((group_start, end))
                group_start = end
        groups.append((group_start, sentences[-1][1]))
        return groups


def _embedded_sentences(text: str) -> list[Span]:
    """The sentences ``_groups`` embeds: all of them, unless the text has fewer than two."""
    sentences = sentence_spans(text)
    return sentences if len(sentences) >= 2 else []


def _neighbour_distances(vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Cosine distance of each sentence to the next; renormalised in case an embedder returns a zero
    or unnormalised row, which would otherwise yield NaN and silently disable breaks."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    similarities: npt.NDArray[np.float64] = np.einsum("ij,ij->i", unit[:-1], unit[1:])
    return 1.0 - similarities
