"""Creating, updating, deleting and cloning retrieval profiles in data/retrieval_profiles.yaml from the
command line (the tech spec's ``POST/PUT/DELETE /eval/profiles`` and ``POST .../{id}/clone``).

Each edit changes the file's text entry by entry (core/settings/yaml_entries.py: comments and layout kept) and is
checked as the pipeline reads the file before the caller writes it (through
``settings_file.edit_settings_file``, so concurrent edits take turns), so a wrong value never reaches the
file. Versions are not set here: the version ledger numbers a profile's settings when the configs load
(core/settings/profile_versions.py), as for a hand edit. Deleting a profile removes its entry only: its
partitions, its history and its ledger entries stay, and the leaderboard lists it as removed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

import yaml

from ..errors import ConfigError, InputError, NameTakenError, UnknownNameError
from .configs import RetrievalProfile, build_config_entry, profiles_of_text
from .yaml_entries import edit_entries, entry_name_of

PROFILES_KEY = "profiles"
ProfileAction = Literal["created", "updated", "deleted", "cloned"]
# Keys a command may not set: the name is the command's argument (rename = clone, then delete).
_NOT_SETTABLE = frozenset({"name"})
# What a clone does not inherit: a version written in the source pins the source's numbering.
_NOT_CLONED = frozenset({"name", "version"})


@dataclass(frozen=True)
class ProfileEdit:
    action: ProfileAction
    name: str
    text: str
    normalized: bool  # the file was dumped again (its comments lost): the layout could not be edited
    source: str = ""  # the profile a clone copies
    changed_keys: tuple[str, ...] = ()


def parse_assignments(assignments: Sequence[str], option: str = "--set") -> dict[str, Any]:
    """``key=value`` pairs, each value read as YAML (``top_k=10``, ``reranker=null``,
    ``similarity_threshold=0.2``, ``description='dense, k 10'``); keys checked against the profile's
    settings so a typo is named with the known keys."""
    known = {f.name for f in fields(RetrievalProfile)} - _NOT_SETTABLE
    settings: dict[str, Any] = {}
    for assignment in assignments:
        key, equals, text = assignment.partition("=")
        key = key.strip()
        if not equals or not key:
            raise ConfigError(f"{option} {assignment!r}: write KEY=VALUE, e.g. {option} top_k=10")
        if key in _NOT_SETTABLE:
            raise ConfigError(
                f"{option} {assignment!r}: the name is not a setting; to rename a profile, clone it under the "
                f"new name and delete the old one"
            )
        if key not in known:
            raise ConfigError(
                f"{option} {assignment!r}: unknown setting {key!r}; known: {', '.join(sorted(known))}"
            )
        try:
            settings[key] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"{option} {assignment!r}: the value is not valid YAML ({exc})") from None
    return settings


def check_unset_keys(keys: Collection[str], option: str = "--unset") -> None:
    known = {f.name for f in fields(RetrievalProfile)} - _NOT_SETTABLE
    unknown = sorted(set(keys) - known)
    if unknown:
        raise ConfigError(
            f"{option}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )


def create_profile(target: Path, name: str, settings: Mapping[str, Any]) -> ProfileEdit:
    text, raws = _read(target)
    if name in raws:
        raise NameTakenError(
            f"{target} already has a profile named {name!r}: `rag-eval profiles update {name} --set ...` "
            f"changes it, `rag-eval profiles clone {name} NEW` copies it"
        )
    raw = {"name": name, **settings}
    return _edit(target, text, "created", name, append=[raw], changed=tuple(settings))


def update_profile(
    target: Path, name: str, settings: Mapping[str, Any], unset: Collection[str] = ()
) -> ProfileEdit:
    text, raws = _read(target)
    raw = dict(_existing(target, raws, name))
    check_unset_keys(unset)
    not_set = sorted(set(unset) - set(raw))
    if not_set:
        raise ConfigError(
            f"{target}: profile {name!r} does not set {', '.join(not_set)} (it has its default already)"
        )
    both = sorted(set(unset) & set(settings))
    if both:
        raise ConfigError(f"--set and --unset both name {', '.join(both)}: give one of them")
    if not settings and not unset:
        raise ConfigError(f"nothing to update: give --set KEY=VALUE or --unset KEY for profile {name!r}")
    for key in unset:
        del raw[key]
    raw.update(settings)
    return _edit(target, text, "updated", name, replace={name: raw}, changed=(*settings, *unset))


def delete_profile(target: Path, name: str) -> ProfileEdit:
    text, raws = _read(target)
    _existing(target, raws, name)
    if len(raws) == 1:
        raise ConfigError(
            f"{target}: {name!r} is the only profile, and the file needs at least one; create another first"
        )
    return _edit(target, text, "deleted", name, remove=[name])


def clone_profile(target: Path, source: str, name: str, settings: Mapping[str, Any]) -> ProfileEdit:
    text, raws = _read(target)
    original = _existing(target, raws, source)
    if name in raws:
        raise NameTakenError(
            f"{target} already has a profile named {name!r}: choose another name for the clone"
        )
    raw = {"name": name, **{k: v for k, v in original.items() if k not in _NOT_CLONED}}
    raw.update(settings)
    edit = _edit(target, text, "cloned", name, append=[raw], changed=tuple(settings))
    return ProfileEdit(edit.action, name, edit.text, edit.normalized, source, edit.changed_keys)


def _read(target: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """The file's text (checked as the pipeline reads it) and its raw entries by name."""
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{target} does not exist: a workspace has its profiles there (`rag-eval init`)"
        ) from None
    profiles_of_text(text, target)  # a broken file is named first, before anything is changed
    document = yaml.safe_load(text)
    raws = {str(entry_name_of(r)): dict(r) for r in document[PROFILES_KEY]}
    return text, raws


def _existing(target: Path, raws: Mapping[str, dict[str, Any]], name: str) -> dict[str, Any]:
    if name not in raws:
        raise UnknownNameError(
            f"no retrieval profile named {name!r} in {target}; configured: {', '.join(raws)}"
        )
    return raws[name]


def _edit(
    target: Path,
    text: str,
    action: ProfileAction,
    name: str,
    *,
    replace: Mapping[str, dict[str, Any]] | None = None,
    append: Sequence[dict[str, Any]] = (),
    remove: Collection[str] = (),
    changed: Sequence[str] = (),
) -> ProfileEdit:
    """The edit, after checking the entry it writes (errors name the file and the key) and that the
    edited text reads as the profiles expected and keeps the file's other keys."""
    document = yaml.safe_load(text)
    entries = [dict(r) for r in document[PROFILES_KEY] if entry_name_of(r) not in remove]
    entries = [dict((replace or {}).get(str(entry_name_of(r)), r)) for r in entries] + [
        dict(r) for r in append
    ]
    written = next((i for i, r in enumerate(entries) if entry_name_of(r) == name), None)
    if written is not None:  # the entry this command writes, named as the user wrote it
        build_config_entry(RetrievalProfile, entries[written], target, PROFILES_KEY, written)
    expected = [
        build_config_entry(RetrievalProfile, r, target, PROFILES_KEY, i) for i, r in enumerate(entries)
    ]
    others = {k: v for k, v in document.items() if k != PROFILES_KEY}

    def reads_as(edited: str) -> bool:
        try:
            profiles = list(profiles_of_text(edited, target))
            kept = {k: v for k, v in (yaml.safe_load(edited) or {}).items() if k != PROFILES_KEY}
        except (InputError, yaml.YAMLError, AttributeError):
            return False
        return profiles == expected and kept == others

    edit = edit_entries(text, PROFILES_KEY, reads_as, replace=replace, append=append, remove=remove)
    return ProfileEdit(action, name, edit.text, edit.normalized, changed_keys=tuple(dict.fromkeys(changed)))
