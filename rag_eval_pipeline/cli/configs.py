"""`rag-eval profiles list|show` and `rag-eval chunk-configs list|apply|presets`: what is configured,
adding or changing chunk configs from a file without hand-editing data/chunk_configs.yaml, and the
bundled presets (core/chunk_config_presets.py) to copy or apply.

`apply` merges by name and edits the YAML text in place, entry by entry, so the file's comments and
layout survive; only where that cannot be done safely (a flow-style list, block scalars) is the file
rewritten in normalized form, and the output says so.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from ..core.chunk_config_presets import load_presets, presets_text
from ..core.configs import (
    DEFAULT_MAX_CHUNK_CONFIGS,
    DEFAULT_SEPARATORS,
    ChunkConfig,
    RetrievalProfile,
    build_config_entry,
    load_chunk_configs,
)
from ..core.errors import ConfigError, InputError
from ..core.files import write_text_atomically
from ..core.monitoring_settings import EVALUATION_MODES
from ..core.profile_versions import ProfileVersions
from ..core.project_files import ProjectFiles
from ..core.text_table import format_table
from .runs import DEFAULT_LAUNCH_URL

CHUNK_CONFIGS_KEY = "chunk_configs"


class _Dumper(yaml.SafeDumper):
    """Separators such as "\\n\\n" are written as escaped double-quoted strings, as people write them."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if any(ch in value for ch in "\n\r\t") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def _dump(value: object, flow: bool) -> str:
    return yaml.dump(
        value, Dumper=_Dumper, default_flow_style=flow, sort_keys=False, allow_unicode=True, width=10**6
    )


# ---------------------------------------------------------------------------------------------------
# chunk-configs apply: plain Python, no Dagster


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
    existing_raw = document.get(CHUNK_CONFIGS_KEY) or []
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
    edited = _edit_in_place(text, [new[n] for n in changed], [new[n] for n in added])
    if edited is not None and _reads_as(edited, document, expected):
        return ChunkConfigMerge(edited, added, changed, unchanged, normalized=False)
    merged_raw = [
        new[c.name].raw if c.name in changed else raw for c, raw in zip(existing, existing_raw, strict=True)
    ]
    merged_raw += [new[name].raw for name in added]
    dumped = _dump({**document, CHUNK_CONFIGS_KEY: merged_raw}, flow=False)
    return ChunkConfigMerge(dumped, added, changed, unchanged, normalized=bool(text.strip()))


def _edit_in_place(
    text: str, changed: Sequence[ChunkConfigEntry], added: Sequence[ChunkConfigEntry]
) -> str | None:
    """Replace the text of each changed entry and append the added ones after the last entry, in the
    style of the entries around them; None when the layout is not one this can edit safely."""
    items = _chunk_config_items(text)
    if items is None:
        return None
    spans = {}
    for item in items:
        span = _item_span(text, item)
        name = _entry_name(item)
        if span is None or name is None:
            return None
        spans[name] = span
    edits = [(*spans[e.name][:2], _render(e.raw, spans[e.name][2], spans[e.name][3])) for e in changed]
    if added:
        _, last_end, prefix, flow = spans[_entry_name(items[-1]) or ""]
        position = last_end
        if flow:  # after the line the last entry's braces close on
            newline = text.find("\n", last_end)
            position = len(text) if newline == -1 else newline + 1
        lead = "\n" if position and text[position - 1] != "\n" else ""
        addition = "".join(
            f"{prefix}{_render(e.raw, prefix, flow)}\n" if flow else _render(e.raw, prefix, flow)
            for e in added
        )
        edits.append((position, position, lead + addition))
    for start, end, replacement in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _chunk_config_items(text: str) -> list[yaml.Node] | None:
    """The entries under ``chunk_configs:`` when they are a non-empty block-style list (None otherwise)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    sequence = next(
        (v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == CHUNK_CONFIGS_KEY), None
    )
    if not isinstance(sequence, yaml.SequenceNode) or sequence.flow_style or not sequence.value:
        return None
    return list(sequence.value)


def _entry_name(item: yaml.Node) -> str | None:
    if not isinstance(item, yaml.MappingNode):
        return None
    for key, value in item.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "name" and isinstance(value, yaml.ScalarNode):
            return str(value.value)
    return None


def _item_span(text: str, item: yaml.Node) -> tuple[int, int, str, bool] | None:
    """(start, end, the "  - " before the entry, flow style). A flow entry is its braces; a block entry
    runs from the start of its "- " line to the end of the line holding its last value."""
    line_start = text.rfind("\n", 0, item.start_mark.index) + 1
    prefix = text[line_start : item.start_mark.index]
    if not isinstance(item, yaml.MappingNode) or not re.fullmatch(r" *- +", prefix):
        return None
    if item.flow_style:
        return item.start_mark.index, item.end_mark.index, prefix, True
    last = _last_value_end(item)
    if last is None:
        return None
    end = text.find("\n", last)
    return line_start, (len(text) if end == -1 else end + 1), prefix, False


def _last_value_end(node: yaml.Node) -> int | None:
    if isinstance(node, yaml.ScalarNode):
        return None if node.style in ("|", ">") else node.end_mark.index
    if isinstance(node, yaml.MappingNode) and node.value:
        return _last_value_end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode):
        if node.flow_style or not node.value:
            return node.end_mark.index
        return _last_value_end(node.value[-1])
    return None


def _render(raw: dict[str, Any], prefix: str, flow: bool) -> str:
    if flow:
        return _dump(raw, flow=True).strip()
    lines = _dump(raw, flow=False)
    indent = " " * len(prefix)
    return "".join((prefix if i == 0 else indent) + line + "\n" for i, line in enumerate(lines.splitlines()))


def _reads_as(text: str, document: dict[str, Any], expected: Sequence[ChunkConfig]) -> bool:
    """Whether the edited text parses to exactly the merged configs and leaves every other key alone."""
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
        lines.append(
            f"note: {target} was rewritten in normalized form (its layout could not be edited in place), so "
            f"its comments were not kept"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# listings


def format_profiles(profiles: Sequence[RetrievalProfile]) -> str:
    rows = [
        [
            p.name,
            f"v{p.version}",
            str(p.top_k),
            " + ".join(
                f"{name} {weight:g}" if p.is_fused else name
                for name, weight in (("knn", p.vector_weight), ("bm25", p.keyword_weight))
                if weight > 0
            ),
            "-" if p.similarity_threshold is None else f"{p.similarity_threshold:g}",
            p.reranker or "-",
            "yes" if p.query_rewrite_enabled else "no",
            p.config_hash,
            p.description,
        ]
        for p in profiles
    ]
    header = [
        "profile",
        "version",
        "k",
        "retrievers",
        "threshold",
        "reranker",
        "rewrite",
        "hash",
        "description",
    ]
    return format_table(header, rows)


def format_profile(profile: RetrievalProfile, source: str, versions: ProfileVersions) -> str:
    settings = {k: v for k, v in asdict(profile).items() if k not in ("name", "version", "description")}
    lines = [
        f"profile {profile.name} ({source})",
        f"version: {profile.version}",
        f"hash: {profile.config_hash}",
        f"retrievers: {'+'.join(profile.retrievers)}"
        + (" (fused by weighted RRF)" if profile.is_fused else "")
        + f", {profile.candidate_depth} candidates per retriever",
        f"description: {profile.description or '-'}",
        "settings:",
    ]
    dumped = yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, width=100)
    lines += [f"  {line}" for line in dumped.splitlines()]
    lines.append(f"versions recorded in {versions.path}:")
    for entry in versions.history(profile.name):
        lines.append(f"  v{entry['version']}  first seen {entry['first_seen']}  hash {entry['hash']}")
    return "\n".join(lines)


def format_chunk_configs(configs: Sequence[ChunkConfig], limit: int) -> str:
    rows = []
    for c in configs:
        other = []
        if c.separators != DEFAULT_SEPARATORS:
            other.append(f"separators {list(c.separators)!r}")
        if c.chunker == "semantic":
            other.append(f"breakpoint_percentile {c.breakpoint_percentile:g}")
        if c.length != "characters":
            other.append(f"length {c.length}")
        if c.counts_tokens:
            other.append(f"tokenizer {c.tokenizer}")
        rows.append(
            [
                c.name,
                c.chunker,
                str(c.chunk_size),
                str(c.chunk_overlap),
                "; ".join(other) or "-",
                c.config_hash,
            ]
        )
    table = format_table(["chunk_config", "chunker", "size", "overlap", "other", "hash"], rows)
    return f"{table}\n{len(configs)} of at most {limit} (max_chunk_configs)"


# ---------------------------------------------------------------------------------------------------
# the commands


def add_config_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    profiles = commands.add_parser("profiles", help="the retrieval profiles: list, or show one")
    profile_actions = profiles.add_subparsers(dest="action", required=True)
    profile_actions.add_parser("list", help="every profile with its version and settings hash")
    show = profile_actions.add_parser("show", help="one profile: every setting, version, hash, versions")
    show.add_argument("name")
    chunk_configs = commands.add_parser(
        "chunk-configs", help="the chunk configs: list, apply a file, or print the bundled presets"
    )
    chunk_actions = chunk_configs.add_subparsers(dest="action", required=True)
    chunk_actions.add_parser("list", help="every chunk config with its settings hash")
    presets = chunk_actions.add_parser(
        "presets",
        help="print the bundled presets (the published studies' configs in cl100k_base tokens) as YAML "
        "to copy into data/chunk_configs.yaml or to `apply`; no workspace needed",
    )
    presets.add_argument("names", nargs="*", metavar="NAME", help="only these presets (default: all)")
    apply = chunk_actions.add_parser(
        "apply", help="merge a YAML file of chunk configs into data/chunk_configs.yaml by name"
    )
    apply.add_argument("file", type=Path)
    apply.add_argument("--run", action="store_true", help="then evaluate the added and changed configs")
    apply.add_argument("--mode", choices=EVALUATION_MODES, default="full", help="with --run: quick or full")
    apply.add_argument(
        "--launch",
        nargs="?",
        const=DEFAULT_LAUNCH_URL,
        metavar="URL",
        help="with --run: submit to `dagster dev`",
    )


def chunk_config_presets(names: Sequence[str] = ()) -> str:
    """The presets file as shipped (comments included), or a file of only the named presets."""
    if not names:
        return presets_text()
    presets = {c.name: c for c in load_presets()}
    unknown = [n for n in names if n not in presets]
    if unknown:
        raise ConfigError(f"no preset named {', '.join(unknown)}; the presets are: {', '.join(presets)}")
    text = presets_text()
    entries = {}  # each entry's lines as the file writes them, comments between entries left out
    for item in _chunk_config_items(text) or ():
        span, name = _item_span(text, item), _entry_name(item)
        if span is not None and name is not None:
            entries[name] = text[span[0] : span[1]]
    return f"{CHUNK_CONFIGS_KEY}:\n" + "".join(entries[n] for n in dict.fromkeys(names))


def run_presets_command(args: argparse.Namespace) -> int:
    try:
        print(chunk_config_presets(args.names), end="")
        return 0
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run_config_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    if args.action == "presets":
        return run_presets_command(args)
    try:
        if args.action == "apply":  # the file may not hold valid chunk configs yet
            return _apply(args, files)
        configs = files.load_configs()
        if args.command == "chunk-configs":
            print(format_chunk_configs(configs.chunk_configs, configs.max_chunk_configs))
        elif args.action == "list":
            print(format_profiles(configs.profiles))
        else:
            print(format_profile(configs.profile(args.name), files.profiles_file, files.profile_versions()))
        return 0
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _apply(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..runner.in_process import sync_configs
    from ..runner.instance import project_instance
    from .runs import execute_evaluation

    target = files.path(files.chunk_configs_file)
    entries = read_chunk_config_file(args.file)
    merge = merge_chunk_configs(target, entries)
    if merge.modified:
        write_text_atomically(target, merge.text)
    print(describe_merge(files.chunk_configs_file, merge))
    configs = files.load_configs()
    with project_instance(files.root) as instance:
        changes = sync_configs(instance, configs)
    added = [
        f"{kind} {', '.join(names)}"
        for kind, names in (("chunk_config", changes.add_chunk_configs), ("profile", changes.add_profiles))
        if names
    ]
    print(f"partitions added: {'; '.join(added)}" if added else "partitions: already in step")
    if not args.run:
        return 0
    to_evaluate = [*merge.added, *merge.changed]
    if not to_evaluate:
        print("nothing new to evaluate")
        return 0
    return execute_evaluation(files, chunk_configs=to_evaluate, mode=args.mode, launch_url=args.launch)
