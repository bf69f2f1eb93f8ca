"""The diagnostics' profile runs search the collection once a query: the deepest search is made first
and the shallower ones are its first hits.

A vector store returns a query's top k best first with ties in document order (``VectorStore.search``),
so the first k hits of a search at depth d >= k are the search at depth k: the replay at the profile's
own depth and the oracle-chunking runs (core/diagnostics/oracle_chunking.py) are served from the
oracle k's deep replay (diagnose.py). The oracle k reads the first hits of its deep lists the same way
(oracles.py).

The searches are kept for the process, per collection at its fingerprint (the chunks and the embedder
it was completed from): the partitions of one chunk config search one collection with the same
questions, and `rag-eval run` diagnoses them in one process, so a chunk config's dense, dense-top10 and
hybrid profiles search it once between them, and the later ones never open it. A collection without a
fingerprint (one being written) keeps its searches to the view.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace

from ..embedding.base import Vectors
from ..retrieval.indexes import ChunkIndexes
from ..vector_store.base import ScoredChunk, VectorStore
from .store_view import StoreView

# query vector -> (the depth searched, its hits)
Searches = dict[bytes, tuple[int, list[ScoredChunk]]]

KEPT_COLLECTIONS = 8  # the demo diagnoses 4 chunk configs' collections; each is ~0.1 MB of hits
_kept: OrderedDict[tuple[str, str, str], Searches] = OrderedDict()
_kept_lock = threading.Lock()


def kept_searches(store: VectorStore, name: str) -> Searches:
    """The process's searches of collection ``name`` at its fingerprint (new and private when it has
    none)."""
    fingerprint = store.fingerprint(name)
    if not fingerprint:
        return {}
    key = (store.location, name, fingerprint)
    with _kept_lock:
        searches = _kept.get(key)
        if searches is None:
            searches = _kept[key] = {}
            while len(_kept) > KEPT_COLLECTIONS:
                _kept.popitem(last=False)
        else:
            _kept.move_to_end(key)
        return searches


def forget_searches() -> None:
    """Every kept search dropped (tests that count searches start from none)."""
    with _kept_lock:
        _kept.clear()


class RememberedSearches(StoreView):
    """A view of a vector store that keeps each query's deepest search: a search no deeper than one
    made is answered from it; a deeper one goes to the store and is kept instead. Its ``session`` opens
    the store's only when a search must go to the store."""

    def __init__(self, store: VectorStore) -> None:
        super().__init__(store)
        self._found: dict[str, Searches] = {}
        self._held: set[str] = set()  # in a session, not opened yet
        self._opened = ExitStack()
        self.searched = 0  # query rows sent to the store
        self.served = 0  # query rows answered from a deeper search

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        found = self._found.get(name)
        if found is None:
            found = self._found[name] = kept_searches(self.store, name)
        keys = [row.tobytes() for row in queries]
        missing = [i for i, key in enumerate(keys) if key not in found or found[key][0] < k]
        if missing:
            if name in self._held:
                self._held.discard(name)
                self._opened.enter_context(self.store.session(name))
            for i, hits in zip(missing, self.store.search(name, queries[missing], k), strict=True):
                found[keys[i]] = (k, hits)
        self.searched += len(missing)
        self.served += len(keys) - len(missing)
        return [found[key][1][:k] for key in keys]

    @contextmanager
    def session(self, name: str) -> Iterator[None]:
        self._held.add(name)
        try:
            yield
        finally:
            self._held.discard(name)
            self._opened.close()


def searched_once(indexes: ChunkIndexes) -> ChunkIndexes:
    """``indexes`` with the dense side's searches remembered (the keyword side as it is)."""
    if indexes.dense is None:
        return indexes
    return replace(indexes, dense=replace(indexes.dense, store=RememberedSearches(indexes.dense.store)))
