"""Profiles and chunk configs: listed from the configs, edited through runner/settings_edits.py (the
CLI's owner of the same edits: the file's lock, an atomic write, the partitions synced)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from .calls import (
    NAME,
    ApiError,
    Call,
    ObjectList,
)


def _profile_json(profile: Any) -> dict[str, Any]:
    settings = {k: v for k, v in asdict(profile).items() if k not in ("name", "version", "description")}
    return {
        "id": profile.name,
        "name": profile.name,
        "version": profile.version,
        "hash": profile.config_hash,
        "description": profile.description,
        "settings": settings,
    }


def list_profiles(call: Call) -> Any:
    profiles = call.files.load_configs().profiles
    return {"items": [_profile_json(p) for p in profiles], "total": len(profiles)}


def get_profile(call: Call) -> Any:
    name = call.name("name")
    profile = call.files.load_configs().profile(name)
    versions = call.files.profile_versions().history(name)
    return {**_profile_json(profile), "versions": list(versions)}


def _profile_edit(
    call: Call,
    action: str,
    name: str,
    settings: Mapping[str, Any],
    unset: Sequence[str] = (),
    new_name: str | None = None,
) -> Any:
    from ..runner.settings_edits import edit_profile

    if new_name is not None and not NAME.match(new_name):
        raise ApiError(400, f"{new_name[:80]!r} is not a valid profile name: letters, digits, '_', '.', '-'")
    change = edit_profile(call.files, action, name, settings, unset, new_name)  # type: ignore[arg-type]
    return {
        "action": change.edit.action,
        **_profile_json(change.profile),
        "source": change.edit.source,
        "partitions_added": list(change.partitions.add_profiles),
    }


def create_profile(call: Call) -> Any:
    body = call.fields({"name": str, "settings": dict}, required=["name"])
    if not NAME.match(body["name"]):
        raise ApiError(
            400, f"{body['name'][:80]!r} is not a valid profile name: letters, digits, '_', '.', '-'"
        )
    return _profile_edit(call, "create", body["name"], body.get("settings") or {})


def update_profile(call: Call) -> Any:
    body = call.fields({"settings": dict, "unset": list})
    return _profile_edit(
        call, "update", call.name("name"), body.get("settings") or {}, body.get("unset") or ()
    )


def delete_profile(call: Call) -> Any:
    return _profile_edit(call, "delete", call.name("name"), {})


def clone_profile(call: Call) -> Any:
    body = call.fields({"name": str, "settings": dict}, required=["name"])
    return _profile_edit(call, "clone", call.name("name"), body.get("settings") or {}, new_name=body["name"])


def _chunk_config_json(config: Any) -> dict[str, Any]:
    settings = {k: v for k, v in asdict(config).items() if k != "name"}
    return {"id": config.name, "name": config.name, "hash": config.config_hash, "settings": settings}


def list_chunk_configs(call: Call) -> Any:
    configs = call.files.load_configs()
    return {
        "items": [_chunk_config_json(c) for c in configs.chunk_configs],
        "total": len(configs.chunk_configs),
        "max_chunk_configs": configs.max_chunk_configs,
    }


def apply_chunk_config(call: Call) -> Any:
    """``rag-eval chunk-configs apply NAME --document DOC...``: ``affected_documents`` as the CLI says."""
    from ..runner.settings_edits import apply_chunk_config_to_documents, sync_partitions_of

    name = call.name("name")
    body = call.fields({"document_ids": list}, required=["document_ids"])
    if not body["document_ids"]:
        raise ApiError(422, "field 'document_ids': give at least one document id (or glob)")
    applied = apply_chunk_config_to_documents(call.files, name, body["document_ids"], "document_ids")
    sync_partitions_of(call.files)
    return applied.record()


def apply_chunk_configs(call: Call) -> Any:
    """``rag-eval chunk-configs apply FILE``, the file's entries in the body: merged by name into
    data/chunk_configs.yaml (added, changed, unchanged), the partitions synced."""
    from ..core.settings.chunk_config_edits import chunk_config_entries
    from ..runner.settings_edits import merge_chunk_config_entries, sync_partitions_of

    body = call.fields({"chunk_configs": ObjectList}, required=["chunk_configs"])
    entries = chunk_config_entries(body["chunk_configs"], "the request body")
    merge = merge_chunk_config_entries(call.files, entries, "the request body")
    changes = sync_partitions_of(call.files)
    return {
        "added": list(merge.added),
        "changed": list(merge.changed),
        "unchanged": list(merge.unchanged),
        "partitions_added": list(changes.add_chunk_configs),
    }
