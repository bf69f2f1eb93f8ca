"""Chunk configs and retrieval profiles: what users edit under ``data/`` and what partitions are named by.

Names become Dagster dynamic partition keys, which are not validated by Dagster: a ``|`` makes a key
vanish from a multi-partition and a ``,`` cannot be backfilled from the UI. They also name folders
(data/bm25/<chunk config>, the warehouse's partition folders), where ``.`` or ``..`` would reach the
parent folder. So names are checked here, and every value's type by the shared settings-file reader.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

import yaml

from ..errors import WORKSPACE_HINT, ConfigError, UnknownNameError
from ..types import ChunkConfigName, ProfileName, sha256_hex
from .settings_file import build_settings, parse_yaml

# One path component and one partition key: starts with a letter or digit (so never ".", ".." or a
# hidden ".name"), then letters, digits, '_', '.', '-'; short enough for folder and collection names.
NAME_MAX_LENGTH = 64
NAME_PATTERN = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{NAME_MAX_LENGTH - 1}}}$")
DEFAULT_MAX_CHUNK_CONFIGS = 10

T = TypeVar("T")
ChunkerKind = Literal["fixed", "recursive", "token", "semantic"]
CHUNKER_KINDS: tuple[str, ...] = get_args(ChunkerKind)
DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ". ", " ", "")
# What a token is: MiniLM's WordPiece (the embedding model's own tokens), OpenAI's cl100k_base (what the
# published chunking studies count), or else the path of a Hugging Face tokenizer.json file.
TokenizerName = Literal["minilm", "cl100k_base"]
TOKENIZER_NAMES: tuple[str, ...] = get_args(TokenizerName)
DEFAULT_TOKENIZER: TokenizerName = "minilm"
LengthUnit = Literal["characters", "tokens"]
LENGTH_UNITS: tuple[str, ...] = get_args(LengthUnit)
DEFAULT_BREAKPOINT_PERCENTILE = 90.0
# Settings only some chunkers read (tokenizer and length have their own checks): those chunkers, and the
# default every other chunker must keep, as any other value would change nothing.
_CHUNKER_ONLY_SETTINGS: dict[str, tuple[tuple[ChunkerKind, ...], object]] = {
    "separators": (("recursive", "semantic"), DEFAULT_SEPARATORS),
    "breakpoint_percentile": (("semantic",), DEFAULT_BREAKPOINT_PERCENTILE),
}
# Settings added after configs were first written, left out of the hash while they hold these defaults:
# a config written before them keeps its hash, so its partitions do not turn stale.
_LATER_SETTING_DEFAULTS: dict[str, object] = {
    "tokenizer": DEFAULT_TOKENIZER,
    "length": "characters",
    "documents": None,
}


# English text in WordPiece or cl100k tokens: what a size counted in tokens is in characters, for
# estimates (core/project/workload.py) and comparisons (core/generation/quality.py's probe_config).
CHARACTERS_PER_TOKEN = 4


@dataclass(frozen=True)
class ChunkConfig:
    """How to cut documents. ``chunk_size`` and ``chunk_overlap`` count characters, except tokens for
    ``token`` and for ``recursive`` with ``length: tokens``."""

    name: ChunkConfigName
    chunker: ChunkerKind
    chunk_size: int
    chunk_overlap: int = 0
    separators: tuple[str, ...] = DEFAULT_SEPARATORS
    # semantic: split where the cosine distance between neighbouring sentences exceeds this percentile.
    breakpoint_percentile: float = DEFAULT_BREAKPOINT_PERCENTILE
    # token, and recursive with length "tokens": which tokens are counted (a TokenizerName, or a
    # tokenizer.json path relative to the workspace root, or absolute).
    tokenizer: str = DEFAULT_TOKENIZER
    # recursive: what a piece's length is, its characters or its tokens under ``tokenizer``.
    length: LengthUnit = "characters"
    # The documents (ids as the corpus names them) this config's chunk set covers; None: all of them.
    # A config limited to some documents is evaluated on the questions about them only, and is not
    # ranked with whole-corpus setups (core/evaluation/document_scope.py, core/leaderboard/ranking.py).
    documents: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        where = f"chunk config {self.name!r}"
        _check_name(self.name, where)
        self._check_documents(where)
        if self.chunker not in CHUNKER_KINDS:
            raise ConfigError(
                f"{where}: unknown chunker {self.chunker!r}; use one of {', '.join(CHUNKER_KINDS)}"
            )
        if not _is_int(self.chunk_size) or self.chunk_size <= 0:
            raise ConfigError(f"{where}: chunk_size must be a positive integer, got {self.chunk_size!r}")
        if not _is_int(self.chunk_overlap) or self.chunk_overlap < 0:
            raise ConfigError(f"{where}: chunk_overlap must be >= 0, got {self.chunk_overlap!r}")
        if self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"{where}: chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size "
                f"({self.chunk_size}); lower the overlap or raise the size"
            )
        if self.chunker == "semantic" and self.chunk_overlap:
            raise ConfigError(
                f"{where}: the semantic chunker cuts at topic shifts and takes no chunk_overlap"
            )
        if not 0 < self.breakpoint_percentile < 100:
            raise ConfigError(f"{where}: breakpoint_percentile must lie in (0, 100)")
        self._check_ignored_settings(where)

    def _check_ignored_settings(self, where: str) -> None:
        """A setting the chunker would ignore (separators, breakpoint_percentile, tokenizer, length) is
        refused rather than silently doing nothing."""
        for setting, (users, default) in _CHUNKER_ONLY_SETTINGS.items():
            if self.chunker not in users and getattr(self, setting) != default:
                chunkers = " and ".join(users) + (" chunkers" if len(users) > 1 else " chunker")
                raise ConfigError(
                    f"{where}: {setting} is used by the {chunkers} only, so it would change nothing for "
                    f"{self.chunker}; remove {setting}"
                )
        if self.length not in LENGTH_UNITS:
            raise ConfigError(
                f"{where}: length must be one of {', '.join(LENGTH_UNITS)}, got {self.length!r}"
            )
        if self.length != "characters" and self.chunker != "recursive":
            raise ConfigError(
                f"{where}: length applies to the recursive chunker only ({self.chunker} counts "
                f"{'tokens' if self.chunker == 'token' else 'characters'} by itself); remove length"
            )
        if not isinstance(self.tokenizer, str) or not (
            self.tokenizer in TOKENIZER_NAMES or self.tokenizer.endswith(".json")
        ):
            raise ConfigError(
                f"{where}: tokenizer must be {' or '.join(TOKENIZER_NAMES)}, or the path of a Hugging "
                f"Face tokenizer.json file (relative to the workspace root); got {self.tokenizer!r}"
            )
        if self.tokenizer != DEFAULT_TOKENIZER and not self.counts_tokens:
            use = "set length: tokens to count tokens" if self.chunker == "recursive" else "remove it"
            raise ConfigError(
                f"{where}: tokenizer is used by the token chunker and by recursive with length: tokens "
                f"only, so it would change nothing here; {use}"
            )

    def _check_documents(self, where: str) -> None:
        if self.documents is None:
            return
        if not isinstance(self.documents, tuple) or not all(
            isinstance(d, str) and d.strip() for d in self.documents
        ):
            raise ConfigError(
                f"{where}: documents must be a list of document ids (paths in the corpus folder)"
            )
        if not self.documents:
            raise ConfigError(
                f"{where}: documents is an empty list, so the config would cover no document; list the "
                f"document ids it applies to, or remove documents to apply it to every document"
            )
        repeated = sorted({d for d in self.documents if self.documents.count(d) > 1})
        if repeated:
            raise ConfigError(f"{where}: documents lists {', '.join(repeated)} more than once")
        object.__setattr__(self, "documents", tuple(sorted(self.documents)))

    @property
    def counts_tokens(self) -> bool:
        """Whether chunk_size and chunk_overlap count tokens of ``tokenizer`` (else characters)."""
        return self.chunker == "token" or (self.chunker == "recursive" and self.length == "tokens")

    def settings(self) -> dict[str, object]:
        """What can change the chunks; the name is a label."""
        settings = {k: v for k, v in asdict(self).items() if k != "name"}
        for key, default in _LATER_SETTING_DEFAULTS.items():
            if settings[key] == default:
                del settings[key]
        return settings

    @property
    def config_hash(self) -> str:
        """What the partition's results depend on: how documents are cut, and which are."""
        return sha256_hex(json.dumps(self.settings(), sort_keys=True, default=list))[:16]

    @property
    def cutting_hash(self) -> str:
        """How one document is cut, whichever documents the config covers: the chunker's fingerprint, so
        a document's chunks (and chunk-level ground truth) stay the same when the config's documents
        change. The config hash for a config over every document."""
        settings = {k: v for k, v in self.settings().items() if k != "documents"}
        return sha256_hex(json.dumps(settings, sort_keys=True, default=list))[:16]


DEFAULT_QUERY_REWRITE_PROMPT = (
    "Rewrite the user's question as a search query for a collection of technical documents. Keep every "
    "name, number and technical term, spell out abbreviations, drop filler words. Reply with the query "
    "only, on one line."
)
DEFAULT_SYSTEM_PROMPT = (
    "Answer the question using only the context passages. Cite the chunk ids of the passages you used "
    "in square brackets, like [chunk_0123abcd]. If the context does not contain the answer, say that "
    "you don't know."
)
Retriever = Literal["knn", "bm25"]
# Each retriever of a fused profile contributes this many candidates at least: ranks beyond top_k still
# move the fused order (a chunk ranked 8th by both retrievers can beat one ranked 1st by only one).
FUSION_CANDIDATES = 20


@dataclass(frozen=True)
class RetrievalProfile:
    """How retrieval runs for one partition column of the leaderboard.

    Dense (``knn``) and keyword (``bm25``) retrieval are fused by weighted Reciprocal Rank Fusion when
    both weights are positive: score = sum of weight / (rrf_k + rank). A zero weight switches a
    retriever off. ``version`` is left to the version ledger unless written in the file.
    """

    name: ProfileName
    top_k: int = 5
    vector_weight: float = 1.0
    keyword_weight: float = 0.0
    rrf_k: float = 60
    # Dense hits whose cosine similarity is below this are dropped (None: keep all).
    similarity_threshold: float | None = None
    query_rewrite_enabled: bool = False
    query_rewrite_prompt: str = DEFAULT_QUERY_REWRITE_PROMPT
    # Used by answer generation: how the answering model is told to use the retrieved chunks.
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    # None (or "none" in the file): no reranking. Otherwise a local sentence-transformers
    # CrossEncoder folder, relative to the project root or absolute.
    reranker: str | None = None
    rerank_depth: int = 20
    # The LLM that judges answers for this profile (None: the model of data/generation.yaml).
    judge_model: str | None = None
    version: int | None = None
    description: str = ""

    def __post_init__(self) -> None:
        where = f"retrieval profile {self.name!r}"
        _check_name(self.name, where)
        if not _is_int(self.top_k) or self.top_k <= 0:
            raise ConfigError(f"{where}: top_k must be an integer >= 1, got {self.top_k!r}")
        for key in ("vector_weight", "keyword_weight", "rrf_k"):
            value = getattr(self, key)
            if not _is_number(value) or value < 0:
                raise ConfigError(f"{where}: {key} must be a number >= 0, got {value!r}")
            object.__setattr__(self, key, float(value))
        if self.vector_weight == 0 and self.keyword_weight == 0:
            raise ConfigError(
                f"{where}: vector_weight and keyword_weight are both 0, so nothing would be retrieved; "
                f"give at least one a positive weight"
            )
        if self.similarity_threshold is not None:
            if not _is_number(self.similarity_threshold) or not -1 <= self.similarity_threshold <= 1:
                raise ConfigError(
                    f"{where}: similarity_threshold is a cosine similarity and must lie in [-1, 1] "
                    f"(or be null), got {self.similarity_threshold!r}"
                )
            if self.vector_weight == 0:
                raise ConfigError(
                    f"{where}: similarity_threshold filters dense hits, but vector_weight is 0; remove "
                    f"the threshold or give vector_weight a positive value"
                )
            object.__setattr__(self, "similarity_threshold", float(self.similarity_threshold))
        for key in ("query_rewrite_prompt", "system_prompt"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key).strip():
                raise ConfigError(f"{where}: {key} must be a non-empty string")
        if isinstance(self.reranker, str) and self.reranker.strip().lower() in ("", "none"):
            object.__setattr__(self, "reranker", None)
        if not _is_int(self.rerank_depth) or self.rerank_depth < self.top_k:
            raise ConfigError(
                f"{where}: rerank_depth ({self.rerank_depth!r}) must be an integer >= top_k "
                f"({self.top_k}): the reranker re-orders that many candidates and keeps top_k"
            )
        if self.judge_model is not None and (not isinstance(self.judge_model, str) or not self.judge_model):
            raise ConfigError(f"{where}: judge_model must be a model name or null")
        if self.version is not None and (not _is_int(self.version) or self.version < 1):
            raise ConfigError(
                f"{where}: version must be an integer >= 1, or left out to have it numbered for you"
            )

    def check_fits(self, n_chunks: int, chunk_config: str) -> None:
        """Refuse a ``top_k`` beyond the ``n_chunks`` chunks of the chunk set it retrieves from: no
        retrieval can return more chunks than there are, so such a k would be cut silently, metrics "at
        k" would mean fewer, and k-sized work would be spent on chunks that do not exist. Only known
        once the chunks are cut, so the evaluation step checks it before it retrieves anything.

        The depths before the cut are not refused: a deeper ``rerank_depth`` (20 by default) or fusion
        depth than there are chunks re-orders every chunk, exactly what a depth of ``n_chunks`` does,
        and a small corpus must not fail for a default it did not choose."""
        if self.top_k > n_chunks:
            raise ConfigError(
                f"retrieval profile {self.name!r}: top_k is {self.top_k}, but chunk config {chunk_config!r} "
                f"has {n_chunks} chunks, so no retrieval can return {self.top_k}: set top_k to at most "
                f"{n_chunks} (or cut the documents into more chunks)"
            )

    @property
    def retrievers(self) -> tuple[Retriever, ...]:
        """The retrievers with a positive weight, dense first."""
        weights: tuple[tuple[Retriever, float], ...] = (
            ("knn", self.vector_weight),
            ("bm25", self.keyword_weight),
        )
        return tuple(name for name, weight in weights if weight > 0)

    @property
    def is_fused(self) -> bool:
        return len(self.retrievers) > 1

    @property
    def candidate_depth(self) -> int:
        """How many candidates each retriever returns before fusion, reranking and the cut to top_k."""
        depth = self.top_k
        if self.is_fused:
            depth = max(depth, 2 * self.top_k, FUSION_CANDIDATES)
        if self.reranker is not None:
            depth = max(depth, self.rerank_depth)
        return depth

    def settings(self) -> dict[str, object]:
        """The settings that can change a result: a rewrite prompt that is off, a rerank depth without
        a reranker or an rrf_k without fusion change nothing, so they do not change the hash."""
        settings = {k: v for k, v in asdict(self).items() if k not in ("name", "description", "version")}
        if not self.query_rewrite_enabled:
            del settings["query_rewrite_prompt"]
        if self.reranker is None:
            del settings["rerank_depth"]
        if not self.is_fused:
            del settings["rrf_k"]
        return settings

    @property
    def config_hash(self) -> str:
        return sha256_hex(json.dumps(self.settings(), sort_keys=True))[:16]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)  # type: ignore[arg-type]


def _check_name(name: object, where: str) -> None:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ConfigError(
            f"{where}: the name must start with a letter or digit and hold only letters, digits, '_', "
            f"'.', '-' (at most {NAME_MAX_LENGTH} characters), because it becomes a Dagster partition key "
            f"and a folder name; rename it, e.g. 'fixed-200-0' or 'top5'"
        )


@dataclass(frozen=True)
class PipelineConfigs:
    chunk_configs: tuple[ChunkConfig, ...]
    profiles: tuple[RetrievalProfile, ...]
    max_chunk_configs: int = DEFAULT_MAX_CHUNK_CONFIGS
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def chunk_config(self, name: str) -> ChunkConfig:
        for config in self.chunk_configs:
            if config.name == name:
                return config
        raise ConfigError(
            f"no chunk config named {name!r} in {self.sources.get('chunk_configs', 'the config file')}; "
            f"known: {', '.join(c.name for c in self.chunk_configs)}"
        )

    def profile(self, name: str) -> RetrievalProfile:
        for profile in self.profiles:
            if profile.name == name:
                return profile
        raise UnknownNameError(
            f"no retrieval profile named {name!r} in {self.sources.get('profiles', 'the config file')}; "
            f"known: {', '.join(p.name for p in self.profiles)}"
        )


@dataclass(frozen=True)
class ChunkConfigsFile:
    """What data/chunk_configs.yaml holds."""

    chunk_configs: tuple[ChunkConfig, ...]
    max_chunk_configs: int = DEFAULT_MAX_CHUNK_CONFIGS

    def __post_init__(self) -> None:
        if self.max_chunk_configs < 1:
            raise ConfigError(f"max_chunk_configs must be an integer >= 1, got {self.max_chunk_configs}")


@dataclass(frozen=True)
class ProfilesFile:
    """What data/retrieval_profiles.yaml holds."""

    profiles: tuple[RetrievalProfile, ...]


def load_chunk_configs(path: str | Path, max_chunk_configs: int | None = None) -> tuple[ChunkConfig, ...]:
    """Read ``chunk_configs:`` from a YAML file; ``max_chunk_configs:`` in the file caps the count."""
    return _read_chunk_configs_file(path, max_chunk_configs).chunk_configs


def _read_chunk_configs_file(path: str | Path, max_chunk_configs: int | None = None) -> ChunkConfigsFile:
    """The chunk configs file, its configs checked against the cap (``max_chunk_configs`` or the
    file's own)."""
    document = _read_yaml(path)
    _entries(document, "chunk_configs", path)
    file = build_settings(ChunkConfigsFile, document, path)
    limit = max_chunk_configs or file.max_chunk_configs
    if len(file.chunk_configs) > limit:
        raise ConfigError(
            f"{path}: {len(file.chunk_configs)} chunk configs exceed the maximum of {limit}; remove some or "
            f"raise max_chunk_configs in the file"
        )
    _check_unique([c.name for c in file.chunk_configs], path, "chunk_configs")
    return file


def load_profiles(path: str | Path) -> tuple[RetrievalProfile, ...]:
    """Read ``profiles:`` from a YAML file."""
    return _profiles(_read_yaml(path), path)


def profiles_of_text(text: str, path: str | Path) -> tuple[RetrievalProfile, ...]:
    """The profiles ``text`` holds, read as ``load_profiles`` reads the file ``path`` (errors name it):
    what a command checks an edit of the file with before writing it."""
    return _profiles(_parse_yaml(text, path), path)


def _profiles(document: dict[str, Any], path: str | Path) -> tuple[RetrievalProfile, ...]:
    _entries(document, "profiles", path)
    profiles = build_settings(ProfilesFile, document, path).profiles
    _check_unique([p.name for p in profiles], path, "profiles")
    return profiles


def load_pipeline_configs(chunk_configs_path: str | Path, profiles_path: str | Path) -> PipelineConfigs:
    chunk_configs = _read_chunk_configs_file(chunk_configs_path)
    return PipelineConfigs(
        chunk_configs.chunk_configs,
        load_profiles(profiles_path),
        chunk_configs.max_chunk_configs,
        sources={"chunk_configs": str(chunk_configs_path), "profiles": str(profiles_path)},
    )


def _read_yaml(path: str | Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist: {WORKSPACE_HINT}") from None
    return _parse_yaml(text, path)


def _parse_yaml(text: str, path: str | Path) -> dict[str, Any]:
    try:
        document = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return document


def _entries(document: dict[str, Any], key: str, path: str | Path) -> list[Any]:
    entries = document.get(key)
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: expected a non-empty list under the key {key!r}")
    return entries


def build_config_entry(cls: type[T], entry: Any, path: str | Path, key: str, index: int) -> T:
    """One entry of a config file (or of a file `rag-eval chunk-configs apply` merges in) as ``cls``;
    errors name the file, the list key and the index (``chunk_configs[2].chunk_size``)."""
    return build_settings(cls, entry, path, f"{key}[{index}]")


def _check_unique(names: list[str], path: str | Path, key: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(f"{path}: {key} has two entries named {name!r}; names must be unique")
        seen.add(name)
