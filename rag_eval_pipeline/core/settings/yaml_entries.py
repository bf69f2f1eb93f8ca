"""Editing the list of named entries of a settings file (``chunk_configs:``, ``profiles:``) in its text.

Users comment their settings files, so `rag-eval chunk-configs apply` and `rag-eval profiles
create|update|delete|clone` change the YAML text entry by entry and leave every other line alone: a
replaced entry is written where it was, in the style of its neighbours (block or flow), an added one after
the last entry, a removed one disappears with its lines. Only where that cannot be done safely (a flow
list, block scalars, an entry without a name) is the file written again in normalized form, and the
caller says so. Every edit is checked by the caller's ``reads_as`` before it is kept, and written by
``settings_file.edit_settings_file``, which holds the file's lock from the reading to the writing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """Separators such as "\\n\\n" are written as escaped double-quoted strings, as people write them."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if any(ch in value for ch in "\n\r\t") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(value: object, flow: bool) -> str:
    """``value`` as the settings files write it: keys in their order, unicode as is, no line wrapping."""
    return yaml.dump(
        value, Dumper=_Dumper, default_flow_style=flow, sort_keys=False, allow_unicode=True, width=10**6
    )


@dataclass(frozen=True)
class EntriesEdit:
    """The edited text, and whether it had to be rewritten in normalized form (its comments lost)."""

    text: str
    normalized: bool


def edit_entries(
    text: str,
    key: str,
    reads_as: Callable[[str], bool],
    *,
    replace: Mapping[str, dict[str, Any]] | None = None,
    append: Sequence[dict[str, Any]] = (),
    remove: Collection[str] = (),
) -> EntriesEdit:
    """``text`` with the entries under ``key`` named in ``replace`` replaced by their new raw mapping,
    those named in ``remove`` removed and ``append`` added after the last one: in place when the layout
    allows it and ``reads_as`` accepts the result, else the whole file dumped again (other keys kept)."""
    replace = dict(replace or {})
    edited = _edit_in_place(text, key, replace, append, remove)
    if edited is not None and reads_as(edited):
        return EntriesEdit(edited, normalized=False)
    document = (yaml.safe_load(text) if text.strip() else None) or {}
    entries = [
        replace.get(name, raw) if isinstance(name, str) else raw
        for raw, name in ((raw, entry_name_of(raw)) for raw in document.get(key) or [])
        if name not in remove
    ]
    dumped = dump_yaml({**document, key: [*entries, *append]}, flow=False)
    return EntriesEdit(dumped, normalized=bool(text.strip()))


def set_entry_value(text: str, key: str, name: str, field: str, values: Sequence[str]) -> str | None:
    """``text`` with the list ``field`` of the entry ``name`` set to ``values``, only that value's text
    replaced (the entry's comments and other keys stay as written), in the style it was written in:
    ``[a, b]`` or one ``- a`` line per item. None when the entry or the field is not found, or the
    layout is not one this can edit safely."""
    entry = next((i for i in list_items(text, key) or () if _entry_name(i) == name), None)
    if not isinstance(entry, yaml.MappingNode):
        return None
    value = next((v for k, v in entry.value if isinstance(k, yaml.ScalarNode) and k.value == field), None)
    if not isinstance(value, yaml.SequenceNode) or not value.value:
        return None
    items = [dump_yaml([v], flow=True).strip()[1:-1] for v in values]  # each as YAML writes it in a list
    if value.flow_style:
        return text[: value.start_mark.index] + "[" + ", ".join(items) + "]" + text[value.end_mark.index :]
    end = _last_value_end(value)
    if end is None:
        return None
    first = value.value[0].start_mark
    line_start = text.rfind("\n", 0, first.index) + 1
    dash = text[line_start : first.index]  # "      - " before the first item
    if not re.fullmatch(r" *- +", dash):
        return None
    block = "".join(("" if i == 0 else "\n" + dash) + item for i, item in enumerate(items))
    return text[: first.index] + block + text[end:]


def entry_name_of(raw: object) -> str | None:
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        return str(raw["name"])
    return None


def entry_texts(text: str, key: str) -> dict[str, str]:
    """Each named entry's lines as the file writes them (comments between entries left out); empty
    when the layout is not a block list of mappings."""
    found = {}
    for item in list_items(text, key) or ():
        span, name = _item_span(text, item), _entry_name(item)
        if span is not None and name is not None:
            found[name] = text[span[0] : span[1]]
    return found


def _edit_in_place(
    text: str,
    key: str,
    replace: Mapping[str, dict[str, Any]],
    append: Sequence[dict[str, Any]],
    remove: Collection[str],
) -> str | None:
    """The edits made on the text; None when the layout is not one this can edit safely."""
    items = list_items(text, key)
    if items is None:
        return None
    spans = {}
    for item in items:
        span = _item_span(text, item)
        name = _entry_name(item)
        if span is None or name is None:
            return None
        spans[name] = span
    if any(name not in spans for name in (*replace, *remove)):
        return None
    edits = [
        (*spans[name][:2], _render(raw, spans[name][2], spans[name][3]))
        for name, raw in replace.items()
        if name not in remove
    ]
    for name in remove:
        start, end, _, flow = spans[name]
        if flow:  # the whole line of "  - {...}", its comment too
            start = text.rfind("\n", 0, start) + 1
            newline = text.find("\n", end)
            end = len(text) if newline == -1 else newline + 1
        edits.append((start, end, ""))
    if append:
        _, last_end, prefix, flow = spans[_entry_name(items[-1]) or ""]
        position = last_end
        if flow:  # after the line the last entry's braces close on
            newline = text.find("\n", last_end)
            position = len(text) if newline == -1 else newline + 1
        lead = "\n" if position and text[position - 1] != "\n" else ""
        addition = "".join(
            f"{prefix}{_render(raw, prefix, flow)}\n" if flow else _render(raw, prefix, flow)
            for raw in append
        )
        edits.append((position, position, lead + addition))
    # from the end, so earlier positions stay valid; an insertion at a removal's end goes first
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def list_items(text: str, key: str) -> list[yaml.Node] | None:
    """The entries under ``key`` when they are a non-empty block-style list (None otherwise)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    sequence = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
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
        return dump_yaml(raw, flow=True).strip()
    lines = dump_yaml(raw, flow=False)
    indent = " " * len(prefix)
    return "".join((prefix if i == 0 else indent) + line + "\n" for i, line in enumerate(lines.splitlines()))
