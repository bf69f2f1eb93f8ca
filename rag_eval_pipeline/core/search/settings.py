"""``data/search.yaml``: the space a search explores, how it races, and what it may spend.

Every key is optional; a workspace without the file searches the defaults below (24 candidates: two
chunkers x three sizes x two overlaps, dense and hybrid retrieval). Errors name the file and key.

    chunking:                  # the chunk configs: every combination (sizes and overlaps in tokens or
      chunker: [recursive, token]   # characters, see length)
      chunk_size: [200, 400, 800]
      overlap: [0, 0.25]       # a share of chunk_size
      length: tokens           # tokens (cl100k_base, as the published studies count) or characters
      tokenizer: [cl100k_base]
    retrieval:                 # the profiles: every combination
      top_k: [5]
      keyword_weight: [0, 0.5] # vector_weight is 1 - keyword_weight: 0 dense, 1 keyword, else fused by RRF
      rrf_k: [60]
      similarity_threshold: [null]
      reranker: [null]         # a local cross-encoder folder, or null
      query_rewrite: [false]   # true: the LLM of data/generation.yaml rewrites each question
    budget:                    # the search stops when one is spent (null: no limit)
      wall_seconds: null
      embedded_texts: null     # texts sent to the embedding model (the cache's hits are free)
      llm_usd: null            # what query rewriting may cost
    racing:
      first_sample: 20         # questions in the first round; each round multiplies them by growth
      growth: 2.0
      max_sample: 80           # the race asks at most this many questions (null: every question)
      alpha: 0.05              # family-wise, over the challengers (Holm) and the rounds (Bonferroni)
      seed: 7                  # the question sample and the corpus blocks: nested, the same every time
      corpus_sampling: true    # rounds index the chunks of their questions' references and distractors
      block_chars: 500         # distractors: the chunks whose middle lies in a sampled block of this size
      distractors: 0.25        # the share of blocks kept, times the share of questions asked
      confirm: 1               # the best survivors scored on every question over the whole corpus
      max_candidates: 64       # a larger grid is sampled (seeded)

The objective is the leaderboard's (data/monitoring.yaml, ``leaderboard``): the search finds the setups
the leaderboard would rank first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from ..settings.configs import CHUNKER_KINDS, TOKENIZER_NAMES, ChunkerKind, LengthUnit
from ..settings.settings_file import require_integer, require_unit


@dataclass(frozen=True)
class ChunkingChoices:
    chunker: tuple[ChunkerKind, ...] = ("recursive", "token")
    chunk_size: tuple[int, ...] = (200, 400, 800)
    overlap: tuple[float, ...] = (0.0, 0.25)
    length: LengthUnit = "tokens"
    tokenizer: tuple[str, ...] = ("cl100k_base",)

    def __post_init__(self) -> None:
        for name in ("chunker", "chunk_size", "overlap", "tokenizer"):
            if not getattr(self, name):
                raise ConfigError(f"chunking.{name} must list at least one choice")
        if "semantic" in self.chunker:
            raise ConfigError(
                "chunking.chunker: semantic is not searched (it embeds every sentence to cut, the cost the "
                f"search saves); one of {', '.join(k for k in CHUNKER_KINDS if k != 'semantic')}"
            )
        for size in self.chunk_size:
            require_integer("chunking.chunk_size[]", size, 1)
        for share in self.overlap:
            if not 0 <= share < 1:
                raise ConfigError(f"chunking.overlap is a share of chunk_size in [0, 1), got {share!r}")
        for tokenizer in self.tokenizer:
            if tokenizer not in TOKENIZER_NAMES and not tokenizer.endswith(".json"):
                raise ConfigError(
                    f"chunking.tokenizer: {tokenizer!r} is not {' or '.join(TOKENIZER_NAMES)} nor a "
                    "tokenizer.json path"
                )


@dataclass(frozen=True)
class RetrievalChoices:
    top_k: tuple[int, ...] = (5,)
    keyword_weight: tuple[float, ...] = (0.0, 0.5)
    rrf_k: tuple[float, ...] = (60.0,)
    similarity_threshold: tuple[float | None, ...] = (None,)
    reranker: tuple[str | None, ...] = (None,)
    query_rewrite: tuple[bool, ...] = (False,)

    def __post_init__(self) -> None:
        for name in ("top_k", "keyword_weight", "rrf_k", "similarity_threshold", "reranker", "query_rewrite"):
            if not getattr(self, name):
                raise ConfigError(f"retrieval.{name} must list at least one choice")
        for k in self.top_k:
            require_integer("retrieval.top_k[]", k, 1)
        for weight in self.keyword_weight:
            if not 0 <= weight <= 1:
                raise ConfigError(
                    f"retrieval.keyword_weight is in [0, 1] (vector_weight is 1 minus it), got {weight!r}"
                )


@dataclass(frozen=True)
class SearchBudget:
    wall_seconds: float | None = None
    embedded_texts: int | None = None
    llm_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("wall_seconds", "embedded_texts", "llm_usd"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"budget.{name} must be > 0 or null (no limit), got {value!r}")


@dataclass(frozen=True)
class RacingSettings:
    first_sample: int = 20
    growth: float = 2.0
    alpha: float = 0.05
    seed: int = 7
    corpus_sampling: bool = True
    block_chars: int = 500
    distractors: float = 0.25
    max_sample: int | None = 80
    confirm: int | None = 1
    max_candidates: int = 64

    def __post_init__(self) -> None:
        require_integer("racing.first_sample", self.first_sample, 2)
        if not self.growth > 1:
            raise ConfigError(f"racing.growth must be > 1 (each round adds questions), got {self.growth!r}")
        if not 0 < self.alpha < 1:
            raise ConfigError(f"racing.alpha must be in (0, 1), got {self.alpha!r}")
        require_integer("racing.seed", self.seed, 0)
        require_integer("racing.block_chars", self.block_chars, 100)
        require_unit("racing.distractors", self.distractors)
        if self.max_sample is not None:
            require_integer("racing.max_sample", self.max_sample, 2)
        if self.confirm is not None:
            require_integer("racing.confirm", self.confirm, 1)
        require_integer("racing.max_candidates", self.max_candidates, 2)


@dataclass(frozen=True)
class SearchSettings:
    chunking: ChunkingChoices = field(default_factory=ChunkingChoices)
    retrieval: RetrievalChoices = field(default_factory=RetrievalChoices)
    budget: SearchBudget = field(default_factory=SearchBudget)
    racing: RacingSettings = field(default_factory=RacingSettings)
    source: str = field(default="(defaults)", compare=False)
