"""Resources: where the inputs are, which embedder, which Qdrant. Secrets come only from env vars."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from ..core.answers.settings import LLMJudging
from ..core.corpus.corpus import Corpus
from ..core.embedding.base import Embedder
from ..core.embedding.cache import TEXTS_PER_CALL, CachedEmbedder, EmbeddingCache
from ..core.embedding.local import local_embedder
from ..core.embedding.openai_embedder import OpenAIEmbedder
from ..core.errors import ConfigError
from ..core.generation.settings import LLMSettings
from ..core.langsmith.settings import DEFAULT_API_URL, LangSmithSettings
from ..core.llm.accounting import PriceTable
from ..core.llm.client import LLMClient
from ..core.llm.factory import make_chat_model, make_client
from ..core.progress import Progress, no_progress
from ..core.project.project_files import ProjectFiles, S, project_dir
from ..core.project.workload import ANNOUNCE_SECONDS, AnnouncingEmbedder, Workload
from ..core.retrieval.rerank import Reranker, load_reranker
from ..core.settings.configs import PipelineConfigs, RetrievalProfile
from ..core.vector_store.edge import EdgeVectorStore
from ..core.vector_store.engines import DEFAULT_ENGINE, ENGINE_ENV, open_vector_store
from .evaluation_runs import EvaluationModeResource

if TYPE_CHECKING:  # qdrant-client takes about a second to import: only a run that uses it pays
    from ..core.vector_store.qdrant import QdrantVectorStore


class ProjectResource(dg.ConfigurableResource):
    """The project's files (core/project/project_files.py) for the assets: each location is config, so a run
    or a test can point one elsewhere; a relative location is under ``root``."""

    root: str = Field(default_factory=lambda: str(project_dir()))
    # None: the workspace's rag-eval.yaml (its corpus folder and glob)
    corpus_dir: str | None = ProjectFiles.corpus_dir
    corpus_glob: str | None = ProjectFiles.corpus_glob
    chunk_configs_file: str = ProjectFiles.chunk_configs_file
    profiles_file: str = ProjectFiles.profiles_file
    golden_dataset: str = ProjectFiles.golden_dataset
    generation_file: str = ProjectFiles.generation_file
    answer_evaluation_file: str = ProjectFiles.answer_evaluation_file
    monitoring_file: str = ProjectFiles.monitoring_file
    search_file: str = ProjectFiles.search_file
    profile_versions_file: str = ProjectFiles.profile_versions_file
    keyword_index_dir: str = ProjectFiles.keyword_index_dir

    def files(self) -> ProjectFiles:
        return ProjectFiles(Path(self.root), **self.model_dump(exclude={"root"}))

    def path(self, location: str) -> Path:
        return self.files().path(location)

    def load_configs(self) -> PipelineConfigs:
        return self.files().load_configs()

    def keyword_index_folder(self, chunk_config: str) -> Path:
        return self.files().keyword_index_folder(chunk_config)

    def corpus_folder(self) -> Path:
        return self.files().corpus_folder()

    def corpus_pattern(self) -> str | None:
        return self.files().corpus_pattern()

    def reranker(self, profile: RetrievalProfile) -> Reranker | None:
        """The profile's cross-encoder, loaded once per process; a path is relative to ``root``."""
        if profile.reranker is None:
            return None
        return load_reranker(self.path(profile.reranker))

    def load_corpus(self) -> Corpus:
        return self.files().load_corpus()

    def workload(
        self, chunk_configs: Sequence[str] | None = None, ingestion: bool = True, corpus: Corpus | None = None
    ) -> Workload:
        return self.files().workload(chunk_configs, ingestion, corpus)

    def load_settings(self, cls: type[S]) -> S:
        """The project's settings file of ``cls`` (core/project/project_files.py)."""
        return self.files().load_settings(cls)


def _in_project(location: str) -> str:
    """A default location of the project (core/project/project_files.py), absolute."""
    return str(ProjectFiles(project_dir()).path(location))


class EmbedderResource(dg.ConfigurableResource):
    """``local`` (MiniLM, offline, the default: through onnxruntime once `make setup` has exported it,
    see core/embedding/local.py) or ``openai`` (any OpenAI-protocol endpoint)."""

    provider: str = "local"
    openai_model: str = "text-embedding-3-small"
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    cache_path: str = Field(default_factory=lambda: _in_project(ProjectFiles.embedding_cache_file))
    batch_size: int = 64  # texts a forward pass of sentence-transformers (onnxruntime: ONNX_BATCH_SIZE)
    texts_per_call: int = TEXTS_PER_CALL  # missing texts per call to the model (progress between calls)
    # a step's embedding estimated to take longer is announced before it starts (a test sets 0)
    announce_after_s: float = ANNOUNCE_SECONDS

    def model(self) -> Embedder:
        if self.provider == "local":
            return local_embedder(batch_size=self.batch_size)
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

    def get(
        self, progress: Progress = no_progress, announce: Callable[[str], None] | None = None
    ) -> CachedEmbedder:
        """The model behind the embedding cache; with ``announce``, an embedding estimated to take over
        a minute is announced before it starts (core/project/workload.py, lib/step_progress.py)."""
        cached = CachedEmbedder(
            self.model(),
            EmbeddingCache(self.cache_path),
            texts_per_call=self.texts_per_call,
            progress=progress,
        )
        return (
            AnnouncingEmbedder(cached, announce, threshold=self.announce_after_s)
            if announce is not None
            else cached
        )


class QdrantResource(dg.ConfigurableResource):
    """A Qdrant server when ``url`` (QDRANT_URL) is set, else the embedded ``engine`` under ``local_path``
    (core/vector_store/engines.py: ``edge`` by default, or ``qdrant-local``; RAG_EVAL_VECTOR_ENGINE)."""

    url: str | None = None
    api_key: str | None = None
    engine: str = DEFAULT_ENGINE
    local_path: str = Field(default_factory=lambda: _in_project(ProjectFiles.qdrant_dir))

    def get(
        self, progress: Progress = no_progress, log: dg.DagsterLogManager | None = None
    ) -> EdgeVectorStore | QdrantVectorStore:
        say = log.info if log is not None else None
        return open_vector_store(
            self.engine, path=self.local_path, url=self.url, api_key=self.api_key, progress=progress, log=say
        )


class LLMResource(dg.ConfigurableResource):
    """The chat model for generation and judging. Provider and model come from data/generation.yaml
    unless RAG_EVAL_LLM_PROVIDER / RAG_EVAL_LLM_MODEL override them; the key only from OPENAI_API_KEY."""

    provider: str | None = None
    model: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    cache_path: str = Field(default_factory=lambda: _in_project(ProjectFiles.llm_cache_file))

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
    files = ProjectFiles.in_project(project_dir())
    return {
        "project": ProjectResource(root=str(files.root), golden_dataset=files.golden_dataset),
        "embedder": EmbedderResource(
            provider=os.environ.get("RAG_EVAL_EMBEDDER", "local"),
            openai_model=os.environ.get("RAG_EVAL_OPENAI_EMBEDDING_MODEL", "text-embedding-3-small"),
            openai_api_key=_env_secret("OPENAI_API_KEY"),
            openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        ),
        "qdrant": QdrantResource(
            url=os.environ.get("QDRANT_URL") or None,
            api_key=_env_secret("QDRANT_API_KEY"),
            engine=os.environ.get(ENGINE_ENV) or DEFAULT_ENGINE,
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
