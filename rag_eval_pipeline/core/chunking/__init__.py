"""Chunkers that record where each chunk was cut, and ``build_chunker`` to make one from a config."""

from __future__ import annotations

from pathlib import Path

from ..embedding.base import Embedder
from ..errors import ConfigError
from ..settings.configs import ChunkConfig
from .adapter import ChunkerPositionAdapter
from .base import Chunker, ChunkSet, chunk_corpus, chunks_from_spans, cut_corpus
from .fixed import FixedSizeChunker
from .recursive import RecursiveCharacterChunker
from .semantic import SemanticChunker
from .token import TokenChunker
from .tokenization import TextTokenizer, load_tokenizer

__all__ = [
    "ChunkSet",
    "Chunker",
    "ChunkerPositionAdapter",
    "FixedSizeChunker",
    "RecursiveCharacterChunker",
    "SemanticChunker",
    "TextTokenizer",
    "TokenChunker",
    "build_chunker",
    "chunk_corpus",
    "chunks_from_spans",
    "cut_corpus",
    "load_tokenizer",
]


def build_chunker(config: ChunkConfig, embedder: Embedder | None = None, root: Path | None = None) -> Chunker:
    """The config's cutting hash enters each fingerprint, so ground truth names the exact settings it was
    cut with (not which documents the config covers: a document is cut the same either way). ``root``
    is the workspace a tokenizer.json path is relative to (None: the working directory)."""
    config_hash = config.cutting_hash
    if config.chunker == "fixed":
        return FixedSizeChunker(config.chunk_size, config.chunk_overlap, config_hash=config_hash)
    if config.chunker == "recursive":
        return RecursiveCharacterChunker(
            config.chunk_size,
            config.chunk_overlap,
            config.separators,
            tokenizer=_tokenizer(config, root) if config.counts_tokens else None,
            config_hash=config_hash,
        )
    if config.chunker == "token":
        return TokenChunker(
            config.chunk_size, config.chunk_overlap, _tokenizer(config, root), config_hash=config_hash
        )
    if config.chunker == "semantic":
        if embedder is None:
            raise ConfigError(
                f"chunk config {config.name!r} uses the semantic chunker, which embeds sentences: pass an "
                f"embedder, build_chunker(config, embedder=...)"
            )
        return SemanticChunker(
            embedder,
            config.chunk_size,
            config.breakpoint_percentile,
            config.separators,
            config_hash=config_hash,
        )
    raise ConfigError(f"chunk config {config.name!r}: unknown chunker {config.chunker!r}")


def _tokenizer(config: ChunkConfig, root: Path | None) -> TextTokenizer:
    return load_tokenizer(config.tokenizer, root, where=f"chunk config {config.name!r}: tokenizer")
