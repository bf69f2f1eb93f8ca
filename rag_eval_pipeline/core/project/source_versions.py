"""The versions of what an evaluation reads from outside the pipeline: the documents, each chunk config,
each retrieval profile, the settings files the questions and answers follow, and the leaderboard's
objective.

Dagster records them as observations of its source assets (defs/ingestion/sources.py), so a partition
whose sources and code are unchanged is up to date: `rag-eval run` and the nightly schedule skip it, and
the UI shows the same staleness. Each version is a short hash, or ``UNREADABLE`` when the file cannot be
read (the step that reads it then runs, fails and says why: nothing is skipped on a guess); ``None`` in a
``SourceVersions`` means not looked at.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..answers.settings import AnswerSettings
from ..corpus.corpus_state import scan_corpus_folder
from ..errors import InputError
from ..generation.settings import GenerationSettings
from ..settings.configs import TOKENIZER_NAMES, ChunkConfig, PipelineConfigs
from ..settings.monitoring_settings import MonitoringSettings
from ..types import sha256_hex
from .project_files import ProjectFiles

VERSION_CHARS = 16
# The version of a source that cannot be read: it differs from every real one, so what reads it runs (and
# fails, naming the file) until the file is fixed, never skipped as if it had not changed.
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class SourceVersions:
    documents: str | None
    project_settings: str | None
    chunk_configs: Mapping[str, str] = field(default_factory=dict)
    profiles: Mapping[str, str] = field(default_factory=dict)
    # which chunk configs and profiles are configured: what the leaderboard ranks, and marks as removed
    setups: str | None = None
    # how the leaderboard ranks them (the ``leaderboard`` section of data/monitoring.yaml)
    leaderboard: str | None = None


def documents_version(files: ProjectFiles) -> str:
    """The corpus's sha256 as the corpus asset's data version has it (the same first characters)."""
    try:
        scan = scan_corpus_folder(files.corpus_folder(), files.corpus_pattern())
    except (InputError, OSError):
        return UNREADABLE
    return scan.state.corpus_sha256[:VERSION_CHARS]


def project_settings_version(files: ProjectFiles) -> str:
    """generation.yaml, answer_evaluation.yaml, the golden dataset and the answer labels it names, byte
    for byte (a missing file is a version too: the defaults)."""
    try:
        labels = files.load_settings(AnswerSettings).semantic.labels
    except InputError:
        return UNREADABLE
    parts = []
    for location in (files.generation_file, files.answer_evaluation_file, files.golden_dataset, labels):
        path = files.path(location)
        try:
            content = path.read_bytes() if path.exists() else b"<missing>"
        except OSError:
            return UNREADABLE
        parts.append(f"{location}\0{hashlib.sha256(content).hexdigest()}")
    return sha256_hex("\n".join(parts))[:VERSION_CHARS]


def config_versions(configs: PipelineConfigs, files: ProjectFiles) -> tuple[dict[str, str], dict[str, str]]:
    """Each chunk config's and each profile's settings hash, by name; a chunk config that counts with a
    tokenizer.json file also hashes the file (an edited vocabulary moves every cut)."""
    return (
        {c.name: chunk_config_version(c, files) for c in configs.chunk_configs},
        {p.name: p.config_hash[:VERSION_CHARS] for p in configs.profiles},
    )


def chunk_config_version(config: ChunkConfig, files: ProjectFiles) -> str:
    if config.tokenizer in TOKENIZER_NAMES:
        return config.config_hash[:VERSION_CHARS]
    try:
        content = files.path(config.tokenizer).read_bytes()
    except OSError:
        return UNREADABLE  # the chunks step fails naming the file
    return sha256_hex(f"{config.config_hash}\0{hashlib.sha256(content).hexdigest()}")[:VERSION_CHARS]


def setups_version(configs: PipelineConfigs) -> str:
    """The names of the configured chunk configs and profiles."""
    names = [c.name for c in configs.chunk_configs], [p.name for p in configs.profiles]
    return sha256_hex(repr((sorted(names[0]), sorted(names[1]))))[:VERSION_CHARS]


def leaderboard_settings_version(files: ProjectFiles) -> str:
    """The objective the leaderboard ranks by and the prices of its cost columns (data/generation.yaml's
    llm.prices), as read (a comment or another section edited is no new version; a file that cannot be
    read is ``UNREADABLE``)."""
    try:
        settings = files.load_settings(MonitoringSettings).leaderboard
        prices = sorted(files.load_settings(GenerationSettings).llm.prices.items())
    except (InputError, OSError, UnicodeError):  # the leaderboard step then fails naming the file
        return UNREADABLE
    return sha256_hex(repr((settings, prices)))[:VERSION_CHARS]


def source_versions(files: ProjectFiles, configs: PipelineConfigs | None = None) -> SourceVersions:
    """Every source's version now; configs that cannot be read give no chunk config or profile version."""
    if configs is None:
        try:
            configs = files.load_configs()
        except InputError:
            configs = None
    chunk_configs, profiles = config_versions(configs, files) if configs is not None else ({}, {})
    return SourceVersions(
        documents_version(files),
        project_settings_version(files),
        chunk_configs,
        profiles,
        setups_version(configs) if configs is not None else None,
        leaderboard_settings_version(files),
    )
