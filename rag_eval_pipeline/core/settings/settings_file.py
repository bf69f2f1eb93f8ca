"""Reading a YAML settings file under data/: a mapping of known keys, each value checked against the
annotation of its settings dataclass field, errors naming the file and the key path; and editing one in
place (``edit_settings_file``). ``load_settings(path, SettingsClass)`` reads a whole file.

One mechanism for every settings file (chunk configs, profiles, generation, answer evaluation,
monitoring), so a wrong type is refused the same way everywhere before any ``__post_init__`` range check
runs: ``max_chunk_configs: lots`` is not a ``TypeError`` deep in a comparison, and ``separators: 'abc'``
is not three one-character separators.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import types
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Literal, NoReturn, Protocol, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

from ..errors import ConfigError
from ..store.files import locked, write_text_atomically

T = TypeVar("T")
# Reads a key whose file form differs from its field (raw value, key path) -> field value.
Converter = Callable[[Any, str], Any]


def load_settings(path: str | Path, cls: type[T]) -> T:
    """The settings file at ``path`` read into ``cls`` (a settings dataclass): the one loader of every
    settings file (generation, answer evaluation, monitoring, search, rag-eval.yaml). No file: every key
    has its default. ``cls``'s ``source`` field, when it has one, records the file read; a key whose file
    form differs from its field is read by the converter ``cls.file_converters(path)`` names for its key
    path, when ``cls`` has that static method (GenerationSettings: llm.prices)."""
    path = Path(path)
    document = read_settings_file(path)
    if document is None:
        return cls()
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    converters: Callable[[Path], Mapping[str, Converter]] | None = getattr(cls, "file_converters", None)
    return build_settings(
        cls,
        document,
        path,
        fixed={"source": str(path)} if "source" in fields else None,
        convert=converters(path) if converters else None,
    )


# libyaml's parser when PyYAML was built with it (the wheels are): the same documents, about 10x faster
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    """``text`` as YAML (the safe subset), parsed once per distinct text in a process: a run reads the
    same settings files in every step (an evaluation of the demo parsed them 588 times, 8 % of its CPU).
    Each call gets its own copy, so a caller may change what it gets. Raises ``yaml.YAMLError``."""
    return copy.deepcopy(_parsed(text))


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_LOADER)  # a safe loader: CSafeLoader or SafeLoader
    except yaml.YAMLError:
        # the pure-Python parser's error quotes the bad line with a caret under it: what to fix
        return yaml.load(text, Loader=yaml.SafeLoader)


def read_settings_file(path: Path, known: Collection[str] | None = None) -> dict[str, Any] | None:
    """The file's top-level mapping, or None when there is no file (every key then has its default).
    ``build_settings`` checks the keys and values; ``known`` checks the keys here already."""
    if not path.exists():
        return None
    try:
        document = parse_yaml(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    if known is not None:
        check_known_keys(path, "", document, known)
    return document


class EditedText(Protocol):
    """What an edit of a settings file returns: the file's new text (and whatever the caller reports)."""

    @property
    def text(self) -> str: ...


E = TypeVar("E", bound=EditedText)


def edit_settings_file(path: Path, edit: Callable[[], E]) -> E:
    """Every in-place edit of a settings file (`rag-eval profiles create|update|delete|clone`,
    `chunk-configs apply`, `search --apply`) goes through here: ``edit`` reads ``path`` and returns its
    new ``text``, under an exclusive lock on the file (``<path>.lock``) held until that text is written,
    so edits of one file by several processes take turns, each re-reading what the one before wrote:
    no entry is lost. The file is written (atomically) only when its text changed."""
    with locked(path):
        before = path.read_text(encoding="utf-8") if path.exists() else None
        edited = edit()
        if edited.text != before:
            write_text_atomically(path, edited.text)
    return edited


def check_known_keys(path: str | Path, prefix: str, raw: Mapping[Any, Any], known: Collection[str]) -> None:
    unknown = sorted(str(k) for k in set(raw) - set(known))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) {', '.join(prefix + u for u in unknown)}; known"
            f"{' under ' + prefix.rstrip('.') if prefix else ''}: {', '.join(sorted(known))}"
        )


def build_settings(
    cls: type[T],
    raw: object,
    path: str | Path,
    where: str = "",
    *,
    fixed: Mapping[str, Any] | None = None,
    convert: Mapping[str, Converter] | None = None,
) -> T:
    """``cls`` (a settings dataclass) from one mapping of a settings file.

    Every key must be a field; every value must match its field's annotation (see ``check_value``);
    then ``cls`` runs its own range checks. ``where`` is the key path of ``raw`` ("" for the whole file,
    "llm", "chunk_configs[0]"), so every error names the file and the full key. ``fixed`` are fields
    the file does not set (such as ``source``); ``convert`` reads, by key path, a value whose file form
    differs from its field (llm.prices). A section left empty (``nightly:``) keeps its defaults.
    """
    fixed = fixed or {}
    convert = convert or {}
    prefix = f"{where}." if where else ""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where or 'the file'} must be a mapping of settings, got {_show(raw)}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name not in fixed}  # type: ignore[arg-type]
    check_known_keys(path, prefix, raw, fields)
    missing = [
        name
        for name, f in fields.items()
        if name not in raw and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{path}: missing key(s) {', '.join(prefix + m for m in missing)}")
    hints = _field_types(cls)
    values: dict[str, Any] = dict(fixed)
    for key, value in raw.items():
        key_path = prefix + key
        annotation = hints[key]
        if key_path in convert:
            values[key] = convert[key_path](value, key_path)
        elif value is None and _is_settings_class(annotation):
            continue  # an empty section: its defaults
        else:
            values[key] = check_value(annotation, value, path, key_path, convert)
    try:
        return cls(**values)
    except ConfigError as exc:
        # a list entry is named by its index too; a section's own checks name their keys already
        entry = f"{where}: " if where.endswith("]") else ""
        raise ConfigError(f"{path}: {entry}{exc}") from None


def _field_types(cls: type) -> dict[str, Any]:
    """``get_type_hints(cls)``, resolved once per class: it evaluates every string annotation again on
    each call, and a run builds the same few settings classes in every step (a cold demo run: 0.6 CPU s).
    Callers only read the mapping."""
    hints = _FIELD_TYPES.get(cls)
    if hints is None:
        hints = _FIELD_TYPES[cls] = get_type_hints(cls)
    return hints


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def check_value(
    annotation: Any, value: object, path: str | Path, key: str, convert: Mapping[str, Converter] | None = None
) -> Any:
    """``value`` as the field annotated ``annotation`` holds it, or a ConfigError naming ``path`` and
    ``key``. Understood: int (not bool), float (an int is read as float; finite), str, bool, Literal
    choices (a YAML 1.1 bare on/off, read as a boolean, counts as "on"/"off"), ``X | None``,
    ``tuple[X, ...]`` from a YAML list (a bare string is not a list), ``Mapping[K, V]`` and nested
    settings dataclasses (sections and list entries)."""
    try:
        return _convert(annotation, value, path, key, convert or {})
    except _Mismatch:
        pass  # refused below, outside the handler, so the error carries no internal cause
    _refuse(annotation, value, path, key)


class _Mismatch(Exception):
    """The value is not of the annotated type (the caller names the key and what was expected)."""


def _convert(
    annotation: Any, value: object, path: str | Path, key: str, convert: Mapping[str, Converter]
) -> Any:
    supertype = getattr(annotation, "__supertype__", None)  # a NewType such as ChunkConfigName
    if supertype is not None:
        return _convert(supertype, value, path, key, convert)
    origin = get_origin(annotation)
    if annotation is Any:
        return value
    if annotation is type(None):
        if value is None:
            return None
        raise _Mismatch
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise _Mismatch
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _Mismatch
    if annotation is float:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise _Mismatch
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    if origin is Literal:
        choices = get_args(annotation)
        if isinstance(value, bool):  # YAML 1.1 reads a bare on/off (yes/no) as a boolean
            word = "on" if value else "off"
            if word in choices:
                return word
            raise _Mismatch
        if any(type(value) is type(c) and value == c for c in choices):
            return value
        raise _Mismatch
    if origin in (Union, types.UnionType):
        for option in get_args(annotation):
            try:
                return _convert(option, value, path, key, convert)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin is tuple:
        args = get_args(annotation)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"settings files cannot hold the fixed-length tuple {annotation}")
        if not isinstance(value, list | tuple):
            raise _Mismatch
        return tuple(check_value(args[0], v, path, f"{key}[{i}]", convert) for i, v in enumerate(value))
    if origin in (Mapping, dict) or annotation in (Mapping, dict):
        key_type, value_type = get_args(annotation) or (Any, Any)
        if not isinstance(value, dict):
            raise _Mismatch
        return {
            check_value(key_type, k, path, f"{key} (key {_show(k)})", convert): check_value(
                value_type, v, path, f"{key}.{k}", convert
            )
            for k, v in value.items()
        }
    if _is_settings_class(annotation):
        if not isinstance(value, dict):
            raise _Mismatch
        return build_settings(annotation, value, path, key, convert=convert)
    raise TypeError(f"settings files cannot hold a value annotated {annotation!r} ({key})")


def _refuse(annotation: Any, value: object, path: str | Path, key: str) -> NoReturn:
    expected = describe(annotation)
    separator = ";" if "," in expected else ","  # "one of a, b, c; got 'd'" reads unambiguously
    raise ConfigError(f"{path}: {key} must be {expected}{separator} got {_show(value)}")


def describe(annotation: Any) -> str:
    """What a value annotated ``annotation`` must be, in the words of a YAML file."""
    supertype = getattr(annotation, "__supertype__", None)
    if supertype is not None:
        return describe(supertype)
    origin = get_origin(annotation)
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if annotation in words:
        return words[annotation]
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any value"
    if origin is Literal:
        return "one of " + ", ".join(str(c) for c in get_args(annotation))
    if origin in (Union, types.UnionType):
        return " or ".join(describe(a) for a in get_args(annotation))
    if origin is tuple:
        return "a list of " + _plural(get_args(annotation)[0])
    if origin in (Mapping, dict) or annotation in (Mapping, dict):
        return "a mapping"
    if _is_settings_class(annotation):
        return "a mapping of settings"
    raise TypeError(f"settings files cannot hold a value annotated {annotation!r}")


def _plural(annotation: Any) -> str:
    words = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}
    supertype = getattr(annotation, "__supertype__", annotation)
    if _is_settings_class(supertype):
        return "mappings of settings"
    return words.get(supertype) or f"({describe(annotation)})"


def _is_settings_class(annotation: Any) -> bool:
    return isinstance(annotation, type) and dataclasses.is_dataclass(annotation)


def _show(value: object) -> str:
    """A value as YAML writes it: null, true, false; anything else as Python repr (quotes strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def require_integer(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")


def require_unit(name: str, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")
