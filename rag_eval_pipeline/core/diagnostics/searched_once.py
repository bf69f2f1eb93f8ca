"""The diagnostics' profile runs search the collection once a query: the deepest search is made first
and the shallower ones are its first hits.

A vector store returns a query's top k best first with ties in document order (``VectorStore.search``),
so the first k hits of a search at depth d >= k are the search at depth k: the replay at the profile's
own depth and the oracle-chunking runs (core/diagnostics/oracle_chunking.py) are served from the
oracle k's deep replay (diagnose.py). The oracle k reads the first hits of its deep lists the same way
(oracles.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace

from ..embedding.base import Vectors
from ..retrieval.indexes import ChunkIndexes
from ..types import PositionAwareChunk
from ..vector_store.base import ScoredChunk, VectorStore


class RememberedSearches:
    """A vector store (read-only) that keeps each query's deepest search: a search no deeper than one
    made is answered from it; a deeper one goes to the store and is kept instead."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self._found: dict[tuple[str, bytes], tuple[int, list[ScoredChunk]]] = {}
        self.searched = 0  # query rows sent to the store
        self.served = 0  # query rows answered from a deeper search

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        keys = [(name, row.tobytes()) for row in queries]
        missing = [i for i, key in enumerate(keys) if key not in self._found or self._found[key][0] < k]
        if missing:
            found = self.store.search(name, queries[missing], k)
            for i, hits in zip(missing, found, strict=True):
                self._found[keys[i]] = (k, hits)
        self.searched += len(missing)
        self.served += len(keys) - len(missing)
        return [self._found[key][1][:k] for key in keys]

    def replace_collection(
        self,
        name: str,
        chunks: Sequence[PositionAwareChunk],
        vectors: Vectors,
        chunk_config: str,
        fingerprint: str = "",
    ) -> int:
        raise TypeError("the diagnostics' view of a collection is read-only")

    def fingerprint(self, name: str) -> str | None:
        return self.store.fingerprint(name)

    def count(self, name: str) -> int:
        return self.store.count(name)

    def session(self, name: str) -> AbstractContextManager[None]:
        return self.store.session(name)

    def collection_exists(self, name: str) -> bool:
        return self.store.collection_exists(name)


def searched_once(indexes: ChunkIndexes) -> ChunkIndexes:
    """``indexes`` with the dense side's searches remembered (the keyword side as it is)."""
    if indexes.dense is None:
        return indexes
    return replace(indexes, dense=replace(indexes.dense, store=RememberedSearches(indexes.dense.store)))
