"""The two filters every generated dataset passes: semantic de-duplication, and a check that a local
retriever can tie each question back to its own source at all. Both reject with reasons, never silently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..chunking import build_chunker, chunk_corpus
from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..questions.datasets import ChunkLevelExample, TokenLevelExample
from ..settings.configs import CHARACTERS_PER_TOKEN, ChunkConfig
from ..types import ChunkConfigName, PositionAwareChunk, Rejection
from .base import GenerationResult

ExampleT = TypeVar("ExampleT", TokenLevelExample, ChunkLevelExample)

# Windows the retrievability probe searches for token-level questions when no configured chunk config
# can serve (probe_config).
PROBE_CONFIG = ChunkConfig(ChunkConfigName("retrievability-probe"), "recursive", 400, 50)


def _sources(example: TokenLevelExample | ChunkLevelExample) -> tuple[str, ...]:
    metadata = example.metadata.get("source_doc_ids") or []
    return tuple(str(d) for d in metadata)


def deduplicate(
    examples: Sequence[ExampleT], embedder: Embedder, threshold: float, known: Sequence[ExampleT] = ()
) -> GenerationResult[ExampleT]:
    """Keep the first of every group of questions whose embeddings' cosine is at least ``threshold``.
    ``known`` questions (kept from an earlier generation) come first and are never rejected: a new
    question too close to one of them is."""
    if not examples:
        return GenerationResult(())
    everything: list[ExampleT] = list(known) + list(examples)
    vectors = embedder.embed([e.query for e in everything])
    kept: list[int] = list(range(len(known)))
    rejections = []
    for i, example in enumerate(everything):
        if i < len(known):
            continue
        if kept:
            similarity = vectors[kept] @ vectors[i]
            best = int(np.argmax(similarity))
            if float(similarity[best]) >= threshold:
                earlier = everything[kept[best]]
                rejections.append(
                    Rejection(
                        "duplicate",
                        f"cosine {float(similarity[best]):.3f} >= {threshold} with {earlier.question_id} "
                        f"({earlier.query!r})",
                        _sources(example),
                        example.query,
                        metadata={"question_id": example.question_id},
                    )
                )
                continue
        kept.append(i)
    new: tuple[ExampleT, ...] = tuple(everything[i] for i in kept[len(known) :])
    return GenerationResult(new, tuple(rejections))


def _top_n(
    queries: Sequence[str], windows: Sequence[PositionAwareChunk], embedder: Embedder, n: int
) -> list[list[PositionAwareChunk]]:
    """Exact search (numpy): the probe must not depend on an index's approximation."""
    if not queries:
        return []
    matrix = embedder.embed([w.text for w in windows])
    scores = embedder.embed(list(queries)) @ matrix.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :n]
    return [[windows[j] for j in row] for row in order]


def _filter(
    examples: Sequence[ExampleT],
    windows: Sequence[PositionAwareChunk],
    embedder: Embedder,
    top_n: int,
    is_tied: Callable[[ExampleT, list[PositionAwareChunk]], bool],
) -> GenerationResult[ExampleT]:
    if top_n == 0 or not examples:
        return GenerationResult(tuple(examples))
    found = _top_n([e.query for e in examples], windows, embedder, top_n)
    kept, rejections = [], []
    for example, retrieved in zip(examples, found, strict=True):
        if is_tied(example, retrieved):
            kept.append(example)
            continue
        rejections.append(
            Rejection(
                "unretrievable",
                f"none of the top {top_n} of {len(windows)} passages a local retriever ({embedder.model_id}) "
                f"finds overlaps the question's source",
                _sources(example),
                example.query,
                metadata={"question_id": example.question_id},
            )
        )
    return GenerationResult(tuple(kept), tuple(rejections))


def probe_config(configs: Sequence[ChunkConfig] = ()) -> ChunkConfig:
    """The chunking whose passages the retrievability probe searches for token-level questions: a
    configured chunk config's, so the probe embeds exactly the chunks its chunk_index embeds anyway
    (the embedding cache serves them there), never passages nobody else embeds (issue 34). Of the
    configs that cut every document without an embedder (not semantic), the one nearest PROBE_CONFIG's
    400 characters (tokens counted at 4 characters), the first of equals; PROBE_CONFIG itself without
    one. A config cut like PROBE_CONFIG (the demo's recursive-400-50) gives the very same passages."""
    usable = [c for c in configs if c.documents is None and c.chunker != "semantic"]
    if not usable:
        return PROBE_CONFIG

    def distance(config: ChunkConfig) -> tuple[bool, int]:
        scale = CHARACTERS_PER_TOKEN if config.counts_tokens else 1
        cut_alike = config.cutting_hash == PROBE_CONFIG.cutting_hash
        return (not cut_alike, abs(config.chunk_size * scale - PROBE_CONFIG.chunk_size))

    return min(usable, key=distance)


def probe_windows(
    corpus: Corpus, configs: Sequence[ChunkConfig] = (), root: Path | None = None
) -> list[PositionAwareChunk]:
    """The passages the retrievability probe searches for token-level questions (``probe_config``;
    ``root``: the workspace a tokenizer.json path is relative to)."""
    return chunk_corpus(build_chunker(probe_config(configs), root=root), corpus)


def quality_texts(
    examples: Sequence[ExampleT],
    windows: Sequence[PositionAwareChunk],
    top_n: int,
    known: Sequence[ExampleT] = (),
) -> list[str]:
    """Every text ``deduplicate`` and then the retrievability filter embed for ``examples``, each once:
    the questions (``known`` ones too: the new ones are compared with them), and the passages searched
    when the filter is on. Announced to a ``PrefetchEmbedder``, they go to the model in one call."""
    if not examples:
        return []
    texts = [e.query for e in (*known, *examples)] + ([w.text for w in windows] if top_n > 0 else [])
    return list(dict.fromkeys(texts))


def filter_unretrievable_token_level(
    examples: Sequence[TokenLevelExample],
    corpus: Corpus,
    embedder: Embedder,
    top_n: int,
    windows: Sequence[PositionAwareChunk] | None = None,
) -> GenerationResult[TokenLevelExample]:
    """``windows`` are ``probe_windows(corpus)``, cut here unless given."""
    windows = probe_windows(corpus) if windows is None else windows

    def tied(example: TokenLevelExample, retrieved: list[PositionAwareChunk]) -> bool:
        return any(w.span.overlaps(s) for w in retrieved for s in example.relevant_spans)

    return _filter(examples, windows, embedder, top_n, tied)


def filter_unretrievable_chunk_level(
    examples: Sequence[ChunkLevelExample],
    chunks: Sequence[PositionAwareChunk],
    embedder: Embedder,
    top_n: int,
) -> GenerationResult[ChunkLevelExample]:
    def tied(example: ChunkLevelExample, retrieved: list[PositionAwareChunk]) -> bool:
        return bool({c.chunk_id for c in retrieved} & set(example.relevant_chunk_ids))

    return _filter(examples, chunks, embedder, top_n, tied)
