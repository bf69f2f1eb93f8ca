"""The searchable sides of one chunk set: a vector collection (dense) and a BM25 index (keyword).

Step 2 of an evaluation. ``build_indexes`` makes them (the notebook API, the ``chunk_index`` asset);
``open_indexes`` takes them up again in a later process without re-embedding (``retrieval_results``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..chunking.base import ChunkSet
from ..embedding.base import Embedder
from ..embedding.cache import EmbeddingCounts
from ..progress import Progress, no_progress
from ..settings.configs import Retriever
from ..types import PositionAwareChunk, sha256_hex
from ..vector_store.base import VectorStore, collection_name
from .keyword import KeywordIndex

BOTH_SIDES: tuple[Retriever, ...] = ("knn", "bm25")


@dataclass(frozen=True)
class DenseIndex:
    """The dense side: a vector store collection and the embedder its vectors came from."""

    embedder: Embedder
    store: VectorStore
    collection: str


@dataclass(frozen=True)
class ChunkIndexes:
    """What a retrieval profile searches; a side the caller did not ask for is None. The rest says what
    getting them cost: points written, texts embedded or found in the embedding cache, and whether the
    collection and the BM25 index were built now (False: one made from exactly these chunks was
    reused)."""

    dense: DenseIndex | None
    keyword: KeywordIndex | None
    n_points: int = 0
    embedding: EmbeddingCounts = field(default_factory=EmbeddingCounts)
    keyword_built: bool = False
    dense_built: bool = False

    @property
    def collection(self) -> str:
        """The dense collection's name, '' without a dense side."""
        return self.dense.collection if self.dense is not None else ""

    @property
    def keyword_fingerprint(self) -> str:
        """The fingerprint of the chunk set the BM25 index was built from, '' without a keyword side."""
        return self.keyword.fingerprint if self.keyword is not None else ""

    @contextmanager
    def held_open(self) -> Iterator[None]:
        """The dense collection kept open across a block of profile runs, each of which would open it
        again (qdrant-edge reads a collection's vector files on opening: tens of milliseconds each)."""
        if self.dense is None:
            yield
            return
        with self.dense.store.session(self.dense.collection):
            yield


def build_indexes(
    chunk_set: ChunkSet,
    embedder: Embedder,
    store: VectorStore,
    *,
    collection: str | None = None,
    keyword_folder: Path | None = None,
    retrievers: Collection[Retriever] = BOTH_SIDES,
    progress: Progress = no_progress,
) -> ChunkIndexes:
    """Make the collection (``rag_eval__<chunk set>__<embedder>`` unless named) hold exactly the chunk
    set, embedding through whatever cache the embedder has, and index the chunks for BM25: in memory, or
    saved under ``keyword_folder`` and reused while the chunks are the same. A collection completed
    from exactly these chunks and this embedder is kept as it is: nothing embedded, no point written
    (``n_points`` 0); another one of the same dimension is updated in place (``n_points``: the points
    of new or changed chunks). Only the ``retrievers`` sides are built: a keyword-only evaluation never touches
    the vector store."""
    dense = None
    n_points = 0
    dense_built = False
    before = EmbeddingCounts.of(embedder)
    if "knn" in retrievers:
        name = collection or collection_name(chunk_set.name, embedder.model_id)
        fingerprint = collection_fingerprint(chunk_set, embedder.model_id)
        if store.fingerprint(name) != fingerprint:
            vectors = embedder.embed([c.text for c in chunk_set.chunks])
            n_points = store.replace_collection(name, chunk_set.chunks, vectors, chunk_set.name, fingerprint)
            dense_built = True
        dense = DenseIndex(embedder, store, name)
    keyword, built = _keyword_side(chunk_set.chunks, keyword_folder, retrievers, progress)
    counts = EmbeddingCounts.of(embedder).since(before)
    return ChunkIndexes(dense, keyword, n_points, counts, built, dense_built)


def collection_fingerprint(chunk_set: ChunkSet, embedder_model_id: str) -> str:
    """What a collection's points are made from: the embedder and every chunk (id, place, text)."""
    digest = sha256_hex(f"{embedder_model_id}\0{chunk_set.name}")
    for c in chunk_set.chunks:
        digest = sha256_hex(f"{digest}\0{c.chunk_id}\0{c.doc_id}\0{c.start}\0{c.end}\0{sha256_hex(c.text)}")
    return digest


def open_indexes(
    chunk_set: ChunkSet,
    embedder: Embedder,
    store: VectorStore,
    *,
    collection: str | None = None,
    keyword_folder: Path | None = None,
    retrievers: Collection[Retriever] = BOTH_SIDES,
    progress: Progress = no_progress,
) -> ChunkIndexes:
    """The indexes ``build_indexes`` made for this chunk set, as they are: the collection is searched
    without writing a point; the saved BM25 index is loaded, or rebuilt (``keyword_built``) when it is
    missing or was made from other chunks. ``embedder`` must be the one the collection was built with."""
    dense = None
    if "knn" in retrievers:
        dense = DenseIndex(embedder, store, collection or collection_name(chunk_set.name, embedder.model_id))
    keyword, built = _keyword_side(chunk_set.chunks, keyword_folder, retrievers, progress)
    return ChunkIndexes(dense, keyword, keyword_built=built)


def _keyword_side(
    chunks: tuple[PositionAwareChunk, ...],
    folder: Path | None,
    retrievers: Collection[Retriever],
    progress: Progress,
) -> tuple[KeywordIndex | None, bool]:
    if "bm25" not in retrievers:
        return None, False
    if folder is None:
        return KeywordIndex.build(chunks, progress), True
    return KeywordIndex.load_or_build(folder, chunks, progress)
