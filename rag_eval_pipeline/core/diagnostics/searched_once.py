"""The diagnostics' profile runs search the collection once a query: the deepest search is made first
and the shallower ones are its first hits.

A vector store returns a query's top k best first with ties in document order (``VectorStore.search``),
so the first k hits of a search at depth d >= k are the search at depth k: the replay at the profile's
own depth and the oracle-chunking runs (core/diagnostics/oracle_chunking.py) are served from the
oracle k's deep replay (diagnose.py). The oracle k reads the first hits of its deep lists the same way
(oracles.py).
"""

from __future__ import annotations

from dataclasses import replace

from ..embedding.base import Vectors
from ..retrieval.indexes import ChunkIndexes
from ..vector_store.base import ScoredChunk, VectorStore
from .store_view import StoreView


class RememberedSearches(StoreView):
    """A view of a vector store that keeps each query's deepest search: a search no deeper than one
    made is answered from it; a deeper one goes to the store and is kept instead."""

    def __init__(self, store: VectorStore) -> None:
        super().__init__(store)
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


def searched_once(indexes: ChunkIndexes) -> ChunkIndexes:
    """``indexes`` with the dense side's searches remembered (the keyword side as it is)."""
    if indexes.dense is None:
        return indexes
    return replace(indexes, dense=replace(indexes.dense, store=RememberedSearches(indexes.dense.store)))
