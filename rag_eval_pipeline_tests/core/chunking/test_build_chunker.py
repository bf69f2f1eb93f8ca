from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from rag_eval_pipeline.core.chunking import (
    Chunker,
    FixedSizeChunker,
    RecursiveCharacterChunker,
    SemanticChunker,
    TokenChunker,
    build_chunker,
    chunk_corpus,
)
from rag_eval_pipeline.core.chunking.tokenization import cl100k_tokenizer
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.settings.configs import ChunkConfig, ChunkerKind
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


def test_a_cl100k_token_config_counts_cl100k_tokens() -> None:
    cl100k = build_chunker(
        ChunkConfig(
            name=ChunkConfigName("t"),
            chunker="token",
            chunk_size=200,
            chunk_overlap=0,
            tokenizer="cl100k_base",
        )
    )
    assert isinstance(cl100k, TokenChunker) and cl100k.tokenizer is cl100k_tokenizer()
    assert cl100k.fingerprint != build_chunker(config("token", size=200)).fingerprint
    text = "Chunks of cl100k tokens. " * 40
    chunks = cl100k.chunk_document(doc(text))
    assert_tiles(doc(text), chunks)
    (total,) = cl100k_tokenizer().count_tokens([text])
    assert 200 < total < 400
    assert cl100k_tokenizer().count_tokens([c.text for c in chunks]) == [200, total - 200]


def test_a_recursive_config_by_tokens_counts_its_tokenizer() -> None:
    by_tokens = ChunkConfig(ChunkConfigName("r"), "recursive", 12, length="tokens", tokenizer="cl100k_base")
    chunker = build_chunker(by_tokens)
    assert isinstance(chunker, RecursiveCharacterChunker) and chunker.tokenizer is cl100k_tokenizer()
    assert build_chunker(config("recursive", size=12)).tokenizer is None  # type: ignore[attr-defined]
    chunks = chunker.chunk_document(doc("A first sentence. A second one.\n\nAnother paragraph follows here."))
    assert [c.text for c in chunks] == [
        "A first sentence. A second one.\n\n",
        "Another paragraph follows here.",
    ]


def test_a_tokenizer_file_is_relative_to_the_workspace_root(tmp_path: Path) -> None:
    tokenizer = Tokenizer(WordLevel({"[UNK]": 0, "one": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(tmp_path / "words.json"))
    words = ChunkConfig(ChunkConfigName("words"), "token", 2, tokenizer="words.json")
    chunker = build_chunker(words, root=tmp_path)
    assert [c.text for c in chunker.chunk_document(doc("one two three four five"))] == [
        "one two ",
        "three four ",
        "five",
    ]
    with pytest.raises(
        ConfigError, match=r"chunk config 'words': tokenizer: the tokenizer file .*words.json does not exist"
    ):
        build_chunker(words, root=tmp_path / "elsewhere")
