from __future__ import annotations

import pytest

from rag_eval_pipeline.core.chunking import (
    Chunker,
    FixedSizeChunker,
    RecursiveCharacterChunker,
    SemanticChunker,
    TokenChunker,
    build_chunker,
    chunk_corpus,
)
from rag_eval_pipeline.core.configs import ChunkConfig, ChunkerKind
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.types import ChunkConfigName

from .helpers import HashedBagOfWords, assert_tiles, doc

KINDS: dict[ChunkerKind, type] = {
    "fixed": FixedSizeChunker,
    "recursive": RecursiveCharacterChunker,
    "token": TokenChunker,
    "semantic": SemanticChunker,
}


def config(kind: ChunkerKind, name: str = "cfg", size: int = 20, overlap: int = 0) -> ChunkConfig:
    return ChunkConfig(ChunkConfigName(name), kind, size, overlap)


@pytest.mark.parametrize("kind", list(KINDS))
def test_builds_each_kind_with_a_stable_fingerprint(kind: ChunkerKind) -> None:
    embedder = HashedBagOfWords()
    chunker = build_chunker(config(kind), embedder)
    assert isinstance(chunker, KINDS[kind])
    assert isinstance(chunker, Chunker)
    assert chunker.fingerprint.startswith(f"{kind}:")
    assert chunker.fingerprint == build_chunker(config(kind), embedder).fingerprint
    assert chunker.fingerprint != build_chunker(config(kind, size=21), embedder).fingerprint
    # the name is a label: a renamed config with the same settings cuts the same chunks
    assert chunker.fingerprint == build_chunker(config(kind, name="other"), embedder).fingerprint
    document = doc("A first sentence. A second one.\n\nAnother paragraph follows here.")
    assert_tiles(document, chunker.chunk_document(document))


def test_semantic_without_embedder_names_the_config() -> None:
    with pytest.raises(ConfigError, match=r"'topics'.*embedder"):
        build_chunker(config("semantic", name="topics"))


def test_chunk_corpus_concatenates_documents_in_order() -> None:
    chunks = chunk_corpus(build_chunker(config("fixed", size=4)), [doc("abcdef", "a"), doc("xyz", "b")])
    assert [(c.doc_id, c.text) for c in chunks] == [("a", "abcd"), ("a", "ef"), ("b", "xyz")]
