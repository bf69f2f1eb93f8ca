"""Resources: where the inputs are, which embedder, which Qdrant. Secrets come only from env vars."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import dagster as dg
from pydantic import Field

from ..core.answers.settings import AnswerSettings, LLMJudging, load_answer_settings
from ..core.configs import (
    ChunkConfig,
    PipelineConfigs,
    RetrievalProfile,
    load_chunk_configs,
    load_pipeline_configs,
)
from ..core.corpus import Corpus
from ..core.embedding.base import Embedder
from ..core.embedding.cache import CachedEmbedder, EmbeddingCache
from ..core.embedding.local import SentenceTransformerEmbedder
from ..core.embedding.openai_embedder import OpenAIEmbedder
from ..core.errors import ConfigError
from ..core.generation.settings import GenerationSettings, LLMSettings, load_generation_settings
from ..core.langsmith.settings import DEFAULT_API_URL, LangSmithSettings
from ..core.llm.accounting import PriceTable
from ..core.llm.client import LLMClient
from ..core.llm.factory import make_chat_model, make_client
from ..core.monitoring import MonitoringSettings, load_monitoring_settings
from ..core.paths import child_path
from ..core.profile_versions import ProfileVersions
from ..core.progress import Progress, no_progress
from ..core.retrieval.rerank import Reranker, load_reranker
from ..core.vector_store.qdrant import QdrantVectorStore
from ..core.workload import Workload, estimate_workload
from ..project import project_dir
from .evaluation_runs import EvaluationModeResource


class ProjectResource(dg.ConfigurableResource):
    """The user-editable inputs; relative paths are under ``root``."""

    root: str = Field(default_factory=lambda: str(project_dir()))
    corpus_dir: str = "data/corpus"
    corpus_glob: str = "**/*.md"
    chunk_configs_file: str = "data/chunk_configs.yaml"
    profiles_file: str = "data/retrieval_profiles.yaml"
    golden_dataset: str = "data/datasets/golden_token_level.jsonl"
    generation_file: str = "data/generation.yaml"
    answer_evaluation_file: str = "data/answer_evaluation.yaml"
    # The nightly schedule, quick mode, regression checks and history retention.
    monitoring_file: str = "data/monitoring.yaml"
    # Which settings each profile version had; commit it with the profiles so a team shares numbers.
    profile_versions_file: str = "data/profile_versions.json"
    # One BM25 index folder per chunk config, next to the local Qdrant folders.
    keyword_index_dir: str = "data/bm25"

    def path(self, relative: str) -> Path:
        return Path(self.root) / relative

    def load_configs(self) -> PipelineConfigs:
        """The config files, each profile numbered by the version ledger (which records new settings)."""
        configs = load_pipeline_configs(self.path(self.chunk_configs_file), self.path(self.profiles_file))
        versions = ProfileVersions(self.path(self.profile_versions_file))
        return replace(configs, profiles=versions.assign(configs.profiles))

    def keyword_index_folder(self, chunk_config: str) -> Path:
        """data/bm25/<chunk config>: never the bm25 folder itself or one outside it (core/paths.py)."""
        return child_path(self.path(self.keyword_index_dir), chunk_config)

    def reranker(self, profile: RetrievalProfile) -> Reranker | None:
        """The profile's cross-encoder, loaded once per process; a path is relative to ``root``."""
        if profile.reranker is None:
            return None
        return load_reranker(self.path(profile.reranker))

    def load_corpus(self) -> Corpus:
        return Corpus.from_folder(self.path(self.corpus_dir), glob=self.corpus_glob)

    def workload(
        self, chunk_configs: Sequence[str] | None = None, ingestion: bool = True, corpus: Corpus | None = None
    ) -> Workload:
        """What embedding the corpus will cost (core/workload.py): the named chunk configs (None: all)
        and, with ``ingestion``, synthetic_questions' retrievability probe. A settings file that cannot
        be read leaves its stage out of the estimate, saying so: the step that reads it fails on it."""
        loaded = corpus if corpus is not None else self.load_corpus()
        configs: tuple[ChunkConfig, ...] = ()
        left_out = []
        try:
            configs = tuple(
                c
                for c in load_chunk_configs(self.path(self.chunk_configs_file))
                if chunk_configs is None or c.name in chunk_configs
            )
        except ConfigError as exc:
            left_out.append(f"no estimate for chunking, the chunk configs cannot be read: {exc}")
        probe = False
        if ingestion:
            try:
                probe = self.load_generation_settings().token_level.retrievability_top_n > 0
            except ConfigError as exc:
                left_out.append(f"no estimate for synthetic_questions, its settings cannot be read: {exc}")
        return estimate_workload(loaded, configs, probe, left_out)

    def load_generation_settings(self) -> GenerationSettings:
        return load_generation_settings(self.path(self.generation_file))

    def load_answer_settings(self) -> AnswerSettings:
        return load_answer_settings(self.path(self.answer_evaluation_file))

    def load_monitoring_settings(self) -> MonitoringSettings:
        return load_monitoring_settings(self.path(self.monitoring_file))


class EmbedderResource(dg.ConfigurableResource):
    """``local`` (MiniLM, offline, the default) or ``openai`` (any OpenAI-protocol endpoint)."""

    provider: str = "local"
    openai_model: str = "text-embedding-3-small"
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    cache_path: str = Field(default_factory=lambda: str(project_dir() / "data/cache/embeddings.sqlite"))
    batch_size: int = 64

    def model(self) -> Embedder:
        if self.provider == "local":
            return SentenceTransformerEmbedder(batch_size=self.batch_size)
        if self.provider == "openai":
            if not self.openai_api_key:
                raise ConfigError(
                    "embedder provider 'openai' (RAG_EVAL_EMBEDDER) needs OPENAI_API_KEY in the environment"
                )
            return OpenAIEmbedder(
                self.openai_model, api_key=self.openai_api_key, base_url=self.openai_base_url
            )
        raise ConfigError(
            f"unknown embedder provider {self.provider!r}: use 'local' or 'openai' (RAG_EVAL_EMBEDDER)"
        )

    def get(self, progress: Progress = no_progress) -> CachedEmbedder:
        return CachedEmbedder(self.model(), EmbeddingCache(self.cache_path), self.batch_size, progress)


class QdrantResource(dg.ConfigurableResource):
    """Embedded local mode under ``local_path`` unless ``url`` (QDRANT_URL) names a server."""

    url: str | None = None
    api_key: str | None = None
    local_path: str = Field(default_factory=lambda: str(project_dir() / "data/qdrant"))

    def get(
        self, progress: Progress = no_progress, log: dg.DagsterLogManager | None = None
    ) -> QdrantVectorStore:
        say = log.info if log is not None else None
        if self.url:
            return QdrantVectorStore(url=self.url, api_key=self.api_key, progress=progress, log=say)
        return QdrantVectorStore(path=self.local_path, progress=progress, log=say)


class LLMResource(dg.ConfigurableResource):
    """The chat model for generation and judging. Provider and model come from data/generation.yaml
    unless RAG_EVAL_LLM_PROVIDER / RAG_EVAL_LLM_MODEL override them; the key only from OPENAI_API_KEY."""

    provider: str | None = None
    model: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    cache_path: str = Field(default_factory=lambda: str(project_dir() / "data/cache/llm_responses.sqlite"))

    def is_remote(self, settings: LLMSettings) -> bool:
        """Whether the configured LLM is an OpenAI-protocol endpoint (not the small local model)."""
        provider = self.provider or settings.provider
        return provider == "openai" or (provider == "auto" and bool(self.openai_api_key))

    def client(self, settings: LLMSettings, model: str | None = None) -> LLMClient | None:
        """None when no LLM is configured (provider auto, no key, no local model). ``model`` (a
        profile's judge model) overrides both the settings and RAG_EVAL_LLM_MODEL."""
        chat_model = make_chat_model(
            self.provider or settings.provider,
            model or self.model or settings.model,
            api_key=self.openai_api_key,
            base_url=self.openai_base_url,
            timeout_s=settings.timeout_s,
        )
        if chat_model is None:
            return None
        return make_client(
            chat_model,
            cache_path=self.cache_path,
            prices=PriceTable().with_overrides(settings.prices),
            requests_per_minute=settings.requests_per_minute,
            max_concurrency=settings.max_concurrency,
            max_attempts=settings.max_attempts,
        )

    def judge_client(
        self, settings: LLMSettings, judging: LLMJudging, model: str | None = None
    ) -> LLMClient | None:
        """The LLM that judges answers and checks recall: none when judging is off, or on ``auto``
        without an OpenAI-protocol endpoint; ``on`` without any LLM is a configuration error."""
        if judging == "off" or (judging == "auto" and not self.is_remote(settings)):
            return None
        client = self.client(settings, model)
        if client is None:
            raise ConfigError(
                "llm_judging: on in data/answer_evaluation.yaml needs an LLM: set OPENAI_API_KEY (and "
                "OPENAI_BASE_URL for another server) or install the local model with `make local-llm`"
            )
        return client


class LangSmithResource(dg.ConfigurableResource):
    """Off unless LANGSMITH_API_KEY is set; LANGSMITH_ENDPOINT selects a self-hosted instance."""

    api_key: str | None = None
    endpoint: str | None = None
    timeout_s: float = 10.0

    def settings(self) -> LangSmithSettings | None:
        if not self.api_key:
            return None
        return LangSmithSettings(
            api_key=self.api_key, api_url=self.endpoint or DEFAULT_API_URL, timeout_s=self.timeout_s
        )


def _env_secret(name: str) -> str | dg.EnvVar | None:
    """An EnvVar (shown masked in the UI) when set, else None, so nothing is required offline."""
    return dg.EnvVar(name) if os.environ.get(name) else None


def default_resources() -> dict[str, object]:
    golden = os.environ.get("RAG_EVAL_GOLDEN_DATASET")
    return {
        "project": ProjectResource(golden_dataset=golden) if golden else ProjectResource(),
        "embedder": EmbedderResource(
            provider=os.environ.get("RAG_EVAL_EMBEDDER", "local"),
            openai_model=os.environ.get("RAG_EVAL_OPENAI_EMBEDDING_MODEL", "text-embedding-3-small"),
            openai_api_key=_env_secret("OPENAI_API_KEY"),
            openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        ),
        "qdrant": QdrantResource(
            url=os.environ.get("QDRANT_URL") or None, api_key=_env_secret("QDRANT_API_KEY")
        ),
        "llm": LLMResource(
            provider=os.environ.get("RAG_EVAL_LLM_PROVIDER") or None,
            model=os.environ.get("RAG_EVAL_LLM_MODEL") or None,
            openai_api_key=_env_secret("OPENAI_API_KEY"),
            openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        ),
        "langsmith": LangSmithResource(
            api_key=_env_secret("LANGSMITH_API_KEY"), endpoint=os.environ.get("LANGSMITH_ENDPOINT") or None
        ),
        "evaluation": EvaluationModeResource(),
    }
