"""Reading a YAML settings file under data/: a mapping of known keys, errors naming the file and key."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError


def read_settings_file(path: Path, known: Collection[str]) -> dict[str, Any] | None:
    """The file's top-level mapping, or None when there is no file (every key then has its default)."""
    if not path.exists():
        return None
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    check_known_keys(path, "", document, known)
    return document


def read_section(path: Path, key: str, raw: object, known: Collection[str]) -> dict[str, Any]:
    """One section of a settings file (``key: {...}``): a mapping of known keys, lists read as tuples
    (the frozen settings classes hold tuples)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {key} must be a mapping of settings")
    check_known_keys(path, f"{key}.", raw, known)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}


def check_known_keys(path: Path, prefix: str, raw: dict[str, Any], known: Collection[str]) -> None:
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) {', '.join(prefix + u for u in unknown)}; known: "
            f"{', '.join(prefix + k for k in sorted(known))}"
        )


def require_integer(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")


def require_unit(name: str, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")
