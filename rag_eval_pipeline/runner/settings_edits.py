"""The edits of the settings files that `rag-eval profiles create|update|delete|clone` and `chunk-configs
apply` make, and the HTTP API's profile and chunk config endpoints too: the file edited in place under
its lock and written atomically (core/settings/settings_file.py), the configs read again (which numbers a
new profile version in the ledger), and the partitions synced on the project's instance. What the
caller prints or answers is its own."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..core.evaluation.document_scope import resolve_documents
from ..core.project.project_files import ProjectFiles
from ..core.settings.chunk_config_edits import (
    ChunkConfigEntry,
    ChunkConfigMerge,
    DocumentApply,
    apply_to_documents,
    merge_chunk_configs,
)
from ..core.settings.configs import RetrievalProfile
from ..core.settings.profile_edits import (
    ProfileEdit,
    clone_profile,
    create_profile,
    delete_profile,
    update_profile,
)
from ..core.settings.settings_file import edit_settings_file
from ..lib.partition_sync import PartitionChanges

ProfileAction = Literal["create", "update", "delete", "clone"]


@dataclass(frozen=True)
class ProfileChange:
    edit: ProfileEdit
    profile: RetrievalProfile  # as it is now (a deleted one: as it was)
    before: RetrievalProfile | None  # the profile of that name before the edit
    partitions: PartitionChanges


def edit_profile(
    files: ProjectFiles,
    action: ProfileAction,
    name: str,
    settings: Mapping[str, Any] | None = None,
    unset: Collection[str] = (),
    new_name: str | None = None,
) -> ProfileChange:
    """`profiles create|update|delete|clone`: ``name`` is the profile edited (for clone: the one copied,
    ``new_name`` the copy)."""
    target = files.path(files.profiles_file)
    settings = dict(settings or {})
    before: dict[str, RetrievalProfile] = {p.name: p for p in files.load_configs().profiles}

    def profile_edit() -> ProfileEdit:
        if action == "create":
            return create_profile(target, name, settings)
        if action == "update":
            return update_profile(target, name, settings, unset)
        if action == "delete":
            return delete_profile(target, name)
        assert new_name is not None
        return clone_profile(target, name, new_name, settings)

    edit = edit_settings_file(target, profile_edit)
    configs = files.load_configs()  # numbers the new settings in the version ledger
    profile = before[edit.name] if edit.action == "deleted" else configs.profile(edit.name)
    return ProfileChange(edit, profile, before.get(edit.name), sync_partitions_of(files))


def merge_chunk_config_entries(
    files: ProjectFiles, entries: Sequence[ChunkConfigEntry], source: str
) -> ChunkConfigMerge:
    """`chunk-configs apply FILE`: the entries merged by name into data/chunk_configs.yaml, each entry's
    documents checked against the corpus first (``source`` names where they came from)."""
    scoped = [e for e in entries if e.config.documents is not None]
    if scoped:  # a document that is not in the corpus is named now, not by a warning in a later run
        corpus_ids = {d.doc_id for d in files.load_corpus()}
        for entry in scoped:
            resolve_documents(entry.config.documents or (), corpus_ids, f"{source}: {entry.name}: documents")
    target = files.path(files.chunk_configs_file)
    return edit_settings_file(target, lambda: merge_chunk_configs(target, entries))


@dataclass(frozen=True)
class DocumentsApplied:
    applied: DocumentApply
    corpus_ids: tuple[str, ...]

    @property
    def covered(self) -> int:
        """How many documents the config applies to now."""
        return len(self.corpus_ids) if self.applied.after is None else len(self.applied.after)

    def record(self) -> dict[str, object]:
        return {
            "chunk_config": self.applied.name,
            "affected_documents": len(self.applied.affected),
            "documents": self.covered,
            "of_documents": len(self.corpus_ids),
            "added": list(self.applied.affected),
        }


def apply_chunk_config_to_documents(
    files: ProjectFiles, name: str, documents: Sequence[str], option: str = "--document"
) -> DocumentsApplied:
    """`chunk-configs apply NAME --document DOC`: the config's documents list gains the documents (ids or
    globs, each checked against the corpus; ``option`` names them in an error)."""
    corpus_ids = tuple(d.doc_id for d in files.load_corpus())
    resolved = resolve_documents(documents, list(corpus_ids), option)
    target = files.path(files.chunk_configs_file)
    applied = edit_settings_file(target, lambda: apply_to_documents(target, name, resolved))
    return DocumentsApplied(applied, corpus_ids)


def sync_partitions_of(files: ProjectFiles) -> PartitionChanges:
    """A partition for every configured chunk config and profile, on the project's instance."""
    from .in_process import sync_configs
    from .instance import project_instance

    configs = files.load_configs()
    with project_instance(files.root) as instance:
        return sync_configs(instance, configs)
