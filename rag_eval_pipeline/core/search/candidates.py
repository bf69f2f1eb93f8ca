"""The candidates of a search: every combination of the space's chunk configs and profiles, named so a
name is a Dagster partition key and says what the candidate is (``recursive-400-100-cl100k--k5-kw0.5``).

Candidates that share a chunk config share its chunks and their embeddings: a different k, weight or
threshold never embeds again. A grid larger than ``max_candidates`` is sampled with the search's seed.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import NewType

from ..errors import ConfigError
from ..settings.configs import NAME_PATTERN, ChunkConfig, RetrievalProfile
from ..types import ChunkConfigName, ProfileName
from .settings import ChunkingChoices, RetrievalChoices, SearchSettings

CandidateKey = NewType("CandidateKey", str)
# Between a candidate's chunk config and its profile in its key; neither name holds two dashes in a row.
SEPARATOR = "--"


@dataclass(frozen=True)
class Candidate:
    chunk_config: ChunkConfig
    profile: RetrievalProfile

    @property
    def key(self) -> CandidateKey:
        return CandidateKey(f"{self.chunk_config.name}{SEPARATOR}{self.profile.name}")


def chunk_configs(choices: ChunkingChoices) -> list[ChunkConfig]:
    """Every chunk config of the space, in the order the space lists them; an overlap share that rounds to
    the whole chunk is left out."""
    found = []
    for chunker, size, share, tokenizer in itertools.product(
        choices.chunker, choices.chunk_size, choices.overlap, choices.tokenizer
    ):
        overlap = round(size * share)
        if overlap >= size:
            continue
        tokens = chunker == "token" or choices.length == "tokens"
        unit = _tokenizer_label(tokenizer) if tokens else "chars"
        name = ChunkConfigName(f"{chunker}-{size}-{overlap}-{unit}")
        extra: dict[str, object] = {}
        if chunker == "recursive" and tokens:
            extra = {"length": "tokens", "tokenizer": tokenizer}
        elif chunker == "token":
            extra = {"tokenizer": tokenizer}
        found.append(ChunkConfig(name, chunker, size, overlap, **extra))  # type: ignore[arg-type]
    return list({c.name: c for c in found}.values())  # token chunker: one per tokenizer, not per length


def profiles(choices: RetrievalChoices) -> list[RetrievalProfile]:
    """Every profile of the space; a threshold is left out of keyword-only profiles (it filters dense
    hits), and rrf_k of unfused ones (it changes nothing there)."""
    found: dict[str, RetrievalProfile] = {}
    for k, keyword, rrf_k, threshold, reranker, rewrite in itertools.product(
        choices.top_k,
        choices.keyword_weight,
        choices.rrf_k,
        choices.similarity_threshold,
        choices.reranker,
        choices.query_rewrite,
    ):
        vector = round(1.0 - keyword, 6)
        fused = vector > 0 and keyword > 0
        threshold = threshold if vector > 0 else None
        parts = [f"k{k}", f"kw{keyword:g}"]
        parts += [f"rrf{rrf_k:g}"] if fused else []
        parts += [f"th{threshold:g}"] if threshold is not None else []
        parts += [f"rr{choices.reranker.index(reranker)}"] if reranker else []
        parts += ["rw"] if rewrite else []
        name = ProfileName("-".join(parts))
        found[name] = RetrievalProfile(
            name,
            top_k=k,
            vector_weight=vector,
            keyword_weight=keyword,
            rrf_k=rrf_k if fused else 60,
            similarity_threshold=threshold,
            reranker=reranker,
            rerank_depth=max(20, k),
            query_rewrite_enabled=rewrite,
            description=f"searched: top {k}, keyword weight {keyword:g}"
            + (f", reranker {reranker}" if reranker else ""),
        )
    return list(found.values())


def candidates(settings: SearchSettings) -> list[Candidate]:
    """The space's candidates, chunk config first; sampled down to ``max_candidates`` (seeded, in the
    grid's order) when the grid is larger."""
    grid = [
        Candidate(c, p)
        for c, p in itertools.product(chunk_configs(settings.chunking), profiles(settings.retrieval))
    ]
    for candidate in grid:
        if not NAME_PATTERN.fullmatch(candidate.key.replace(SEPARATOR, "-")) or len(candidate.key) > 128:
            raise ConfigError(f"search candidate {candidate.key!r} makes no valid partition key")
    limit = settings.racing.max_candidates
    if len(grid) <= limit:
        return grid
    kept = set(random.Random(settings.racing.seed).sample(range(len(grid)), limit))
    return [c for i, c in enumerate(grid) if i in kept]


def _tokenizer_label(tokenizer: str) -> str:
    """``cl100k_base`` -> ``cl100k``, ``minilm`` -> ``minilm``, a tokenizer.json path -> its folder's name."""
    if tokenizer == "cl100k_base":
        return "cl100k"
    if tokenizer.endswith(".json"):
        parts = tokenizer.replace("\\", "/").rstrip("/").split("/")
        label = parts[-2] if len(parts) > 1 else parts[-1].removesuffix(".json")
        return "".join(ch if ch.isalnum() else "_" for ch in label)[:24] or "json"
    return tokenizer
