"""A read-only view of a vector store for the diagnostics' replays: a view searches its own way
(``oracle_chunking._DenseView``, ``searched_once.RememberedSearches``) and answers the rest as the store."""

from __future__ import annotations

from contextlib import AbstractContextManager

from ..embedding.base import Vectors
from ..vector_store.base import ScoredChunk, VectorStore


class StoreView:
    def __init__(self, store: VectorStore) -> None:
        self.store = store

    @property
    def location(self) -> str:
        return self.store.location

    def search(self, name: str, queries: Vectors, k: int) -> list[list[ScoredChunk]]:
        return self.store.search(name, queries, k)

    def replace_collection(self, *args: object, **kwargs: object) -> int:
        raise TypeError("a diagnostics view of a collection is read-only")

    def fingerprint(self, name: str) -> str | None:
        return self.store.fingerprint(name)

    def count(self, name: str) -> int:
        return self.store.count(name)

    def session(self, name: str) -> AbstractContextManager[None]:
        return self.store.session(name)

    def collection_exists(self, name: str) -> bool:
        return self.store.collection_exists(name)
