"""The project on disk: the folder that holds data/ and where each of its files is (the corpus, the
settings files, the golden dataset, the local indexes and caches), read with core's loaders.

The one reader of the project's files: the Dagster resource (lib/resources.ProjectResource, whose config
fields are these locations) and the command line both go through it, so neither rebuilds a path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from ..answers.settings import AnswerSettings
from ..corpus.corpus import Corpus
from ..errors import ConfigError, DatasetError
from ..generation.quality import probe_config
from ..generation.settings import GenerationSettings
from ..generation.sources import QuestionSources, question_sources
from ..search.settings import SearchSettings
from ..settings.configs import ChunkConfig, PipelineConfigs, load_chunk_configs, load_pipeline_configs
from ..settings.monitoring_settings import MonitoringSettings
from ..settings.profile_versions import ProfileVersions
from ..settings.settings_file import load_settings
from ..store.paths import child_path
from .workload import Workload, estimate_workload
from .workspace import (
    WORKSPACE_FILE,
    check_workspace_outside_corpus,
    load_workspace_settings,
    locate_workspace,
)

GOLDEN_DATASET_ENV = "RAG_EVAL_GOLDEN_DATASET"

S = TypeVar("S", GenerationSettings, AnswerSettings, MonitoringSettings, SearchSettings)
# Which of ProjectFiles' locations holds each settings file.
SETTINGS_FILES: Mapping[type, str] = {
    GenerationSettings: "generation_file",
    AnswerSettings: "answer_evaluation_file",
    MonitoringSettings: "monitoring_file",
    SearchSettings: "search_file",
}


def project_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The workspace's folder, found as core/errors.PRECEDENCE says (without a --workspace flag)."""
    return locate_workspace(environ=environ).root


@dataclass(frozen=True)
class ProjectFiles:
    """Where each file is: a relative location is under ``root``, an absolute one stays as it is.
    Building a path reads and creates nothing; each ``load_*`` reads its file when called."""

    root: Path
    # None: what the workspace's rag-eval.yaml says (core/project/workspace.py), else data/corpus, every file
    # of a known format
    corpus_dir: str | None = None
    corpus_glob: str | None = None
    chunk_configs_file: str = "data/chunk_configs.yaml"
    profiles_file: str = "data/retrieval_profiles.yaml"
    golden_dataset: str = "data/datasets/golden_token_level.jsonl"
    generation_file: str = "data/generation.yaml"
    answer_evaluation_file: str = "data/answer_evaluation.yaml"
    # The nightly schedule, quick mode, regression checks and history retention.
    monitoring_file: str = "data/monitoring.yaml"
    # The space `rag-eval search` explores (core/search/settings.py).
    search_file: str = "data/search.yaml"
    # Which settings each profile version had; commit it with the profiles so a team shares numbers.
    profile_versions_file: str = "data/profile_versions.json"
    # One BM25 index folder per chunk config, next to the local Qdrant folders.
    keyword_index_dir: str = "data/bm25"
    # Where `rag-eval dataset import|pull` writes unless told otherwise.
    datasets_dir: str = "data/datasets"
    # Embedded Qdrant (unless QDRANT_URL names a server; a folder per collection, each engine's files in
    # it) and the embedding and LLM response caches.
    qdrant_dir: str = "data/qdrant"
    embedding_cache_file: str = "data/cache/embeddings.sqlite"
    # Imported real queries, their pooled passages and every judgement (core/judging/store.py).
    judging_dir: str = "data/judging"
    llm_cache_file: str = "data/cache/llm_responses.sqlite"

    @classmethod
    def in_project(cls, root: Path, environ: Mapping[str, str] = os.environ) -> ProjectFiles:
        """The files of the project at ``root``; ``$RAG_EVAL_GOLDEN_DATASET`` names another golden
        dataset (relative to ``root``, or absolute)."""
        golden = environ.get(GOLDEN_DATASET_ENV)
        return cls(root, golden_dataset=golden) if golden else cls(root)

    def path(self, location: str) -> Path:
        return self.root / location

    def keyword_index_folder(self, chunk_config: str) -> Path:
        """data/bm25/<chunk config>: never the bm25 folder itself or one outside it (core/store/paths.py)."""
        return child_path(self.path(self.keyword_index_dir), chunk_config)

    def profile_versions(self) -> ProfileVersions:
        return ProfileVersions(self.path(self.profile_versions_file))

    def load_configs(self) -> PipelineConfigs:
        """The config files, each profile numbered by the version ledger (which records new settings).
        Parsed again only when one of the three files' bytes changed (``_loaded_configs``)."""
        files = (self.path(self.chunk_configs_file), self.path(self.profiles_file))
        ledger = self.profile_versions()
        paths = (*files, ledger.path)
        key, read = tuple(str(p) for p in paths), _contents(paths)
        kept = _loaded_configs.get(key)
        if kept is not None and kept[0] == read:
            return kept[1]
        configs = load_pipeline_configs(*files)
        configs = replace(configs, profiles=ledger.assign(configs.profiles))
        after = _contents(paths)
        if after[:2] == read[:2]:  # the configs unchanged meanwhile; the ledger as numbering left it
            _loaded_configs[key] = (after, configs)
        return configs

    def corpus_folder(self) -> Path:
        """The documents' folder: ``corpus_dir``, else rag-eval.yaml's ``corpus`` (relative to root);
        one that holds the workspace is refused (core/project/workspace.py)."""
        if self.corpus_dir:
            folder, chosen_by = self.path(self.corpus_dir), f"the project's corpus_dir {self.corpus_dir!r}"
        else:
            folder = self.path(load_workspace_settings(self.root).corpus)
            chosen_by = f"{self.root / WORKSPACE_FILE}: corpus"
        check_workspace_outside_corpus(self.root, folder, chosen_by)
        return folder

    def corpus_pattern(self) -> str | None:
        """Which files of the folder: ``corpus_glob``, else rag-eval.yaml's ``glob`` (None: every file
        of a known format)."""
        return self.corpus_glob or load_workspace_settings(self.root).glob

    def load_corpus(self) -> Corpus:
        return Corpus.from_folder(self.corpus_folder(), self.corpus_pattern())

    def load_settings(self, cls: type[S]) -> S:
        """The project's settings file of ``cls`` (GenerationSettings: ``generation_file``, ...), read by
        core/settings/settings_file.py's ``load_settings``."""
        location = getattr(self, SETTINGS_FILES[cls])
        return load_settings(self.path(location), cls)

    def question_sources(self, settings: GenerationSettings | None = None) -> QuestionSources:
        """Which question sets the evaluation uses (core/generation/sources.py); a golden file that
        evaluate_on asks for and that is missing is a ``DatasetError`` naming it and the import."""
        golden = self.path(self.golden_dataset)
        default = self.path(ProjectFiles.golden_dataset)
        return question_sources(
            settings or self.load_settings(GenerationSettings),
            golden,
            golden_file_named=golden.resolve() != default.resolve(),
        )

    def workload(
        self, chunk_configs: Sequence[str] | None = None, ingestion: bool = True, corpus: Corpus | None = None
    ) -> Workload:
        """What embedding the corpus will cost (core/project/workload.py): the named chunk configs (None: all)
        and, with ``ingestion``, synthetic_questions' retrievability probe. A settings file that cannot
        be read leaves its stage out of the estimate, saying so: the step that reads it fails on it."""
        loaded = corpus if corpus is not None else self.load_corpus()
        every: tuple[ChunkConfig, ...] = ()
        left_out = []
        try:
            every = load_chunk_configs(self.path(self.chunk_configs_file))
        except ConfigError as exc:
            left_out.append(f"no estimate for chunking, the chunk configs cannot be read: {exc}")
        configs = tuple(c for c in every if chunk_configs is None or c.name in chunk_configs)
        probe = False
        # the probe searches a configured chunk config's chunks: an extra stage only when that config
        # is not estimated here (none can serve, or it is not selected)
        chunking = probe_config(every)
        if ingestion:
            try:
                settings = self.load_settings(GenerationSettings)
                probe = settings.token_level.retrievability_top_n > 0 and _uses_synthetic(self, settings)
            except ConfigError as exc:
                left_out.append(f"no estimate for synthetic_questions, its settings cannot be read: {exc}")
        return estimate_workload(loaded, configs, probe and chunking not in configs, left_out, chunking)


def _uses_synthetic(files: ProjectFiles, settings: GenerationSettings) -> bool:
    """Whether synthetic_questions runs (and probes); a golden file asked for and missing fails the run
    elsewhere, so the estimate counts the probe."""
    try:
        return files.question_sources(settings).synthetic
    except DatasetError:
        return True


# The configs a process read, by their files, with the files' bytes then: every step reads them (a chunk
# config or profile by name), and parsing both files and numbering the profiles was ~5 CPU ms a read,
# about 90 reads a cold demo run; reading three small files to compare is a hundredth of that.
_loaded_configs: dict[tuple[str, ...], tuple[tuple[bytes | None, ...], PipelineConfigs]] = {}


def _contents(paths: Sequence[Path]) -> tuple[bytes | None, ...]:
    """Each file's bytes; None for one that does not exist (yet: the ledger is made at first use) or
    cannot be read (the parse then says why, naming it)."""
    found: list[bytes | None] = []
    for path in paths:
        try:
            found.append(path.read_bytes())
        except OSError:
            found.append(None)
    return tuple(found)
