"""Changing data/chunk_configs.yaml from the command line (`rag-eval chunk-configs apply`): merging a file
of configs by name, and applying a configured config to more documents. Edits keep the file's comments
(core/settings/yaml_entries.py) and are checked as the pipeline will read the file before they are written
(through ``settings_file.edit_settings_file``, so concurrent edits take turns).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, InputError, UnknownNameError
from .configs import DEFAULT_MAX_CHUNK_CONFIGS, ChunkConfig, build_config_entry, load_chunk_configs
from .yaml_entries import edit_entries, entry_name_of, set_entry_value

CHUNK_CONFIGS_KEY = "chunk_configs"


@dataclass(frozen=True)
class ChunkConfigEntry:
    """An entry as written in a file (its keys in their order) and the config it validates to."""

    raw: dict[str, Any]
    config: ChunkConfig

    @property
    def name(self) -> str:
        return self.config.name


@dataclass(frozen=True)
class ChunkConfigMerge:
    text: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    normalized: bool  # the file was re-dumped (comments and layout lost), not edited in place

    @property
    def modified(self) -> bool:
        return bool(self.added or self.changed)


def read_chunk_config_file(path: Path) -> list[ChunkConfigEntry]:
    """Entries of ``chunk_configs:`` (the schema of data/chunk_configs.yaml), or a bare list of them."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist: give the path of a YAML file of chunk configs") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    return chunk_config_entries(document, path)


def chunk_config_entries(document: Any, source: str | Path) -> list[ChunkConfigEntry]:
    """The entries of a parsed file (or of an HTTP request's body, `POST /chunk-configs`): a mapping with
    ``chunk_configs:`` only, or a bare list of entries; ``source`` names where they came from."""
    path = source
    if isinstance(document, dict):
        unknown = sorted(set(document) - {CHUNK_CONFIGS_KEY})
        if unknown:
            raise ConfigError(
                f"{path}: unknown top-level key(s) {', '.join(map(str, unknown))}; the file holds "
                f"{CHUNK_CONFIGS_KEY}: [...] only (max_chunk_configs belongs in data/chunk_configs.yaml)"
            )
        document = document.get(CHUNK_CONFIGS_KEY)
    if not isinstance(document, list) or not document:
        raise ConfigError(
            f"{path}: expected a non-empty list under {CHUNK_CONFIGS_KEY}: (entries like those of "
            f"data/chunk_configs.yaml: name, chunker, chunk_size, chunk_overlap)"
        )
    entries = [
        ChunkConfigEntry(dict(raw), build_config_entry(ChunkConfig, raw, path, CHUNK_CONFIGS_KEY, i))
        for i, raw in enumerate(document)
    ]
    seen: set[str] = set()
    for entry in entries:
        if entry.name in seen:
            raise ConfigError(f"{path}: two entries are named {entry.name!r}; names must be unique")
        seen.add(entry.name)
    return entries


def merge_chunk_configs(target: Path, entries: Sequence[ChunkConfigEntry]) -> ChunkConfigMerge:
    """``target`` with the entries merged by name: a new name is appended, a known name with other
    settings replaces its entry, the same settings leave it alone. Checks the result as the pipeline
    will read it (including max_chunk_configs)."""
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    document = (yaml.safe_load(text) if text.strip() else None) or {}
    existing = list(load_chunk_configs(target)) if text.strip() else []
    by_name: dict[str, ChunkConfig] = {c.name: c for c in existing}
    added = tuple(e.name for e in entries if e.name not in by_name)
    changed = tuple(e.name for e in entries if e.name in by_name and by_name[e.name] != e.config)
    unchanged = tuple(e.name for e in entries if e.name in by_name and by_name[e.name] == e.config)
    limit = document.get("max_chunk_configs", DEFAULT_MAX_CHUNK_CONFIGS)
    if len(existing) + len(added) > limit:
        raise ConfigError(
            f"{target}: adding {', '.join(added)} makes {len(existing) + len(added)} chunk configs, more "
            f"than max_chunk_configs ({limit}); remove some from {target} or raise max_chunk_configs there"
        )
    if not (added or changed):
        return ChunkConfigMerge(text, added, changed, unchanged, normalized=False)
    new = {e.name: e for e in entries}
    expected = [new[c.name].config if c.name in changed else c for c in existing]
    expected += [new[name].config for name in added]
    edit = edit_entries(
        text,
        CHUNK_CONFIGS_KEY,
        lambda edited: reads_as(edited, document, expected),
        replace={name: new[name].raw for name in changed},
        append=[new[name].raw for name in added],
    )
    return ChunkConfigMerge(edit.text, added, changed, unchanged, edit.normalized)


def reads_as(text: str, document: dict[str, Any], expected: Sequence[ChunkConfig]) -> bool:
    """Whether the edited text parses to exactly the expected configs and leaves every other key alone."""
    try:
        edited = yaml.safe_load(text)
        entries = edited[CHUNK_CONFIGS_KEY]
        configs = [
            build_config_entry(ChunkConfig, raw, "edited", CHUNK_CONFIGS_KEY, i)
            for i, raw in enumerate(entries)
        ]
    except (yaml.YAMLError, TypeError, KeyError, InputError):
        return False
    others = {k: v for k, v in edited.items() if k != CHUNK_CONFIGS_KEY}
    return configs == list(expected) and others == {
        k: v for k, v in document.items() if k != CHUNK_CONFIGS_KEY
    }


def describe_merge(target: str, merge: ChunkConfigMerge) -> str:
    parts = [
        f"{len(names)} {label}" + (f" ({', '.join(names)})" if names else "")
        for label, names in (
            ("added", merge.added),
            ("changed", merge.changed),
            ("unchanged", merge.unchanged),
        )
    ]
    lines = [f"{target}: {', '.join(parts)}"]
    if not merge.modified:
        lines.append(f"{target} is left as it was")
    elif merge.normalized:
        lines.append(normalized_note(target))
    return "\n".join(lines)


def normalized_note(target: str) -> str:
    return (
        f"note: {target} was rewritten in normalized form (its layout could not be edited in place), so "
        f"its comments were not kept"
    )


# -- a configured config applied to more documents -----------------------------------------------------


@dataclass(frozen=True)
class DocumentApply:
    """``chunk-configs apply NAME --document DOC``: the config's documents before and after, and the
    file's new text. ``affected`` are the documents the config now covers that it did not: the only
    ones the next run cuts, embeds and indexes."""

    name: str
    text: str
    before: tuple[str, ...] | None  # None: every document
    after: tuple[str, ...] | None
    affected: tuple[str, ...]
    normalized: bool

    @property
    def modified(self) -> bool:
        return self.before != self.after


def apply_to_documents(target: Path, name: str, documents: Collection[str]) -> DocumentApply:
    """The config ``name`` of ``target`` applied to ``documents`` as well (ids the caller checked against
    the corpus): its ``documents`` list gains them. A config over every document already covers them,
    and stays as it is."""
    text = target.read_text(encoding="utf-8")
    configs: dict[str, ChunkConfig] = {c.name: c for c in load_chunk_configs(target)}
    if name not in configs:
        raise UnknownNameError(
            f"no chunk config named {name!r} in {target}; configured: {', '.join(configs)}. To try a new "
            f"config on some documents, apply a file whose entry lists them (documents: [...]): "
            f"`rag-eval chunk-configs apply FILE`"
        )
    config = configs[name]
    if config.documents is None:
        return DocumentApply(name, text, None, None, (), normalized=False)
    after = tuple(sorted(set(config.documents) | set(documents)))
    affected = tuple(d for d in after if d not in config.documents)
    if not affected:
        return DocumentApply(name, text, config.documents, after, (), normalized=False)
    document = yaml.safe_load(text) or {}
    raw = next(dict(r) for r in document[CHUNK_CONFIGS_KEY] if entry_name_of(r) == name)
    raw["documents"] = list(after)
    expected = [replace(c, documents=after) if c.name == name else c for c in configs.values()]
    check = lambda edited: reads_as(edited, document, expected)  # noqa: E731
    in_place = set_entry_value(text, CHUNK_CONFIGS_KEY, name, "documents", after)
    if in_place is not None and check(in_place):  # the list alone: the entry's comments stay
        return DocumentApply(name, in_place, config.documents, after, affected, normalized=False)
    edit = edit_entries(text, CHUNK_CONFIGS_KEY, check, replace={name: raw})
    return DocumentApply(name, edit.text, config.documents, after, affected, edit.normalized)
