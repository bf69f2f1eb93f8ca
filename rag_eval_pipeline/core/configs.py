"""Chunk configs and retrieval profiles: what users edit under ``data/`` and what partitions are named by.

Names become Dagster dynamic partition keys, which are not validated by Dagster: a ``|`` makes a key
vanish from a multi-partition and a ``,`` cannot be backfilled from the UI. So names are checked here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from .errors import ConfigError
from .types import ChunkConfigName, ProfileName, sha256_hex

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+$")
DEFAULT_MAX_CHUNK_CONFIGS = 10

ChunkerKind = Literal["fixed", "recursive", "token", "semantic"]
CHUNKER_KINDS: tuple[str, ...] = get_args(ChunkerKind)
DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", ". ", " ", "")


def _config_hash(obj: object) -> str:
    """Hash of the settings alone: renaming a config or editing its description changes nothing."""
    settings = {k: v for k, v in asdict(obj).items() if k not in ("name", "description")}  # type: ignore[call-overload]
    return sha256_hex(json.dumps(settings, sort_keys=True, default=list))[:16]


@dataclass(frozen=True)
class ChunkConfig:
    """How to cut documents. ``chunk_size`` counts characters, except tokens for ``token``."""

    name: ChunkConfigName
    chunker: ChunkerKind
    chunk_size: int
    chunk_overlap: int = 0
    separators: tuple[str, ...] = DEFAULT_SEPARATORS
    # semantic: split where the cosine distance between neighbouring sentences exceeds this percentile.
    breakpoint_percentile: float = 90.0

    def __post_init__(self) -> None:
        where = f"chunk config {self.name!r}"
        _check_name(self.name, where)
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

    @property
    def config_hash(self) -> str:
        return _config_hash(self)


@dataclass(frozen=True)
class RetrievalProfile:
    """How retrieval runs for one partition column of the leaderboard."""

    name: ProfileName
    top_k: int = 5
    version: int = 1
    description: str = ""

    def __post_init__(self) -> None:
        where = f"retrieval profile {self.name!r}"
        _check_name(self.name, where)
        if not _is_int(self.top_k) or self.top_k <= 0:
            raise ConfigError(f"{where}: top_k must be an integer >= 1, got {self.top_k!r}")

    @property
    def config_hash(self) -> str:
        return _config_hash(self)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_name(name: object, where: str) -> None:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ConfigError(
            f"{where}: the name must match {NAME_PATTERN.pattern} (letters, digits, '_', '.', '-'), "
            f"because it becomes a Dagster partition key; rename it"
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
        raise ConfigError(
            f"no retrieval profile named {name!r} in {self.sources.get('profiles', 'the config file')}; "
            f"known: {', '.join(p.name for p in self.profiles)}"
        )


def load_chunk_configs(path: str | Path, max_chunk_configs: int | None = None) -> tuple[ChunkConfig, ...]:
    """Read ``chunk_configs:`` from a YAML file; ``max_chunk_configs:`` in the file caps the count."""
    document = _read_yaml(path)
    entries = _entries(document, "chunk_configs", path)
    limit = max_chunk_configs or document.get("max_chunk_configs", DEFAULT_MAX_CHUNK_CONFIGS)
    if len(entries) > limit:
        raise ConfigError(
            f"{path}: {len(entries)} chunk configs exceed the maximum of {limit}; remove some or raise "
            f"max_chunk_configs in the file"
        )
    configs = tuple(_build(ChunkConfig, entry, path, "chunk_configs", i) for i, entry in enumerate(entries))
    _check_unique([c.name for c in configs], path, "chunk_configs")
    return configs


def load_profiles(path: str | Path) -> tuple[RetrievalProfile, ...]:
    """Read ``profiles:`` from a YAML file."""
    entries = _entries(_read_yaml(path), "profiles", path)
    profiles = tuple(_build(RetrievalProfile, entry, path, "profiles", i) for i, entry in enumerate(entries))
    _check_unique([p.name for p in profiles], path, "profiles")
    return profiles


def load_pipeline_configs(chunk_configs_path: str | Path, profiles_path: str | Path) -> PipelineConfigs:
    return PipelineConfigs(
        load_chunk_configs(chunk_configs_path),
        load_profiles(profiles_path),
        sources={"chunk_configs": str(chunk_configs_path), "profiles": str(profiles_path)},
    )


def _read_yaml(path: str | Path) -> dict[str, Any]:
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
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


def _build(cls: Any, entry: Any, path: str | Path, key: str, index: int) -> Any:
    where = f"{path}: {key}[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a mapping of fields")
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(entry) - known)
    if unknown:
        raise ConfigError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    if "name" not in entry:
        raise ConfigError(f"{where}: missing field 'name'")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
    try:
        return cls(**values)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _check_unique(names: list[str], path: str | Path, key: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(f"{path}: {key} has two entries named {name!r}; names must be unique")
        seen.add(name)
