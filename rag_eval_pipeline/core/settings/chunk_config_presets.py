"""Chunk config presets: the configs of the published chunking studies in cl100k_base tokens, shipped
inside the package (chunk_config_presets.yaml beside this file) so every install can print them with
`rag-eval chunk-configs presets` and merge them into data/chunk_configs.yaml."""

from __future__ import annotations

from pathlib import Path

from .configs import ChunkConfig, load_chunk_configs

PRESETS_FILE = Path(__file__).with_name("chunk_config_presets.yaml")


def load_presets() -> tuple[ChunkConfig, ...]:
    """The presets, read and checked by the loader data/chunk_configs.yaml goes through."""
    return load_chunk_configs(PRESETS_FILE)


def presets_text() -> str:
    """The presets file as shipped, comments included: a chunk configs file `apply` accepts."""
    return PRESETS_FILE.read_text(encoding="utf-8")
