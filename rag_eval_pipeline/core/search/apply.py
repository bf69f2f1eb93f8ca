"""`rag-eval search --apply`: the winning tier written into the config files, so the leaderboard evaluates
it on every question as it evaluates every setup.

Each winner's chunk config joins data/chunk_configs.yaml and its profile data/retrieval_profiles.yaml,
edited in place with their comments kept (core/settings/chunk_config_edits.py, core/settings/profile_edits.py); a config
or profile already there (same name: the name says the settings) is left alone. The file's cap on chunk
configs (``max_chunk_configs``) holds: winners are taken best first, and those whose chunk config no
longer fits are left out and named. Partitions are a product, so the next `rag-eval run` evaluates every
chunk config with every profile, the winners' combinations among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any

from ..settings.chunk_config_edits import ChunkConfigEntry, merge_chunk_configs
from ..settings.configs import (
    DEFAULT_MAX_CHUNK_CONFIGS,
    ChunkConfig,
    RetrievalProfile,
    load_chunk_configs,
    load_profiles,
)
from ..settings.profile_edits import create_profile
from ..settings.settings_file import edit_settings_file, read_settings_file
from .candidates import Candidate, CandidateKey


@dataclass(frozen=True)
class AppliedWinners:
    chunk_configs_added: tuple[str, ...]
    profiles_added: tuple[str, ...]
    already_configured: tuple[str, ...]  # chunk configs and profiles the files held already
    left_out: tuple[CandidateKey, ...]  # winners whose chunk config the cap left no room for

    def describe(self, chunk_configs_file: str, profiles_file: str) -> str:
        lines = [
            f"{chunk_configs_file}: added {len(self.chunk_configs_added)} chunk config(s)"
            + (f" ({', '.join(self.chunk_configs_added)})" if self.chunk_configs_added else ""),
            f"{profiles_file}: added {len(self.profiles_added)} profile(s)"
            + (f" ({', '.join(self.profiles_added)})" if self.profiles_added else ""),
        ]
        if self.already_configured:
            lines.append(f"already configured: {', '.join(self.already_configured)}")
        if self.left_out:
            lines.append(
                f"left out, max_chunk_configs of {chunk_configs_file} reached: {', '.join(self.left_out)} "
                "(remove configs or raise max_chunk_configs, then --apply again)"
            )
        lines.append("`rag-eval run` evaluates them with every configured chunk config and profile")
        return "\n".join(lines)


def chunk_config_entry(config: ChunkConfig) -> dict[str, Any]:
    """The config as a file entry: its name and the settings that differ from the defaults."""
    defaults = ChunkConfig(config.name, config.chunker, config.chunk_size)
    entry: dict[str, Any] = {"name": config.name, "chunker": config.chunker, "chunk_size": config.chunk_size}
    for f in fields(ChunkConfig):
        value = getattr(config, f.name)
        if f.name not in entry and value != getattr(defaults, f.name):
            entry[f.name] = list(value) if isinstance(value, tuple) else value
    return entry


def profile_settings(profile: RetrievalProfile) -> dict[str, Any]:
    """The profile's settings that differ from the defaults (its name apart)."""
    defaults = RetrievalProfile(profile.name)
    return {
        f.name: getattr(profile, f.name)
        for f in fields(RetrievalProfile)
        if f.name not in ("name", "version") and getattr(profile, f.name) != getattr(defaults, f.name)
    }


def apply_winners(
    winners: Sequence[Candidate], chunk_configs_file: Path, profiles_file: Path
) -> AppliedWinners:
    """Write ``winners`` (best first) into the two files (see the module docstring)."""
    configured = {c.name for c in load_chunk_configs(chunk_configs_file)}
    document = read_settings_file(chunk_configs_file) or {}
    room = int(document.get("max_chunk_configs", DEFAULT_MAX_CHUNK_CONFIGS)) - len(configured)
    profiles = {p.name for p in load_profiles(profiles_file)}
    new_configs: dict[str, ChunkConfig] = {}
    kept: list[Candidate] = []
    left_out: list[CandidateKey] = []
    for winner in winners:
        name = winner.chunk_config.name
        if name not in configured and name not in new_configs:
            if len(new_configs) >= room:
                left_out.append(winner.key)
                continue
            new_configs[name] = winner.chunk_config
        kept.append(winner)
    if new_configs:
        entries = [ChunkConfigEntry(chunk_config_entry(c), c) for c in new_configs.values()]
        edit_settings_file(chunk_configs_file, lambda: merge_chunk_configs(chunk_configs_file, entries))
    added_profiles: list[str] = []
    for winner in kept:
        profile = winner.profile
        if profile.name in profiles or profile.name in added_profiles:
            continue
        create = partial(create_profile, profiles_file, profile.name, profile_settings(profile))
        edit_settings_file(profiles_file, create)
        added_profiles.append(profile.name)
    already = sorted(
        {w.chunk_config.name for w in kept if w.chunk_config.name in configured}
        | {w.profile.name for w in kept if w.profile.name in profiles}
    )
    return AppliedWinners(tuple(new_configs), tuple(added_profiles), tuple(already), tuple(left_out))
