"""Resources: where the inputs are, which embedder, which Qdrant. Secrets come only from env vars."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from .core.configs import PipelineConfigs, load_pipeline_configs
from .core.corpus import Corpus
from .core.datasets import TokenLevelDataset, read_token_level_jsonl
from .core.embedding.base import Embedder
from .core.embedding.cache import CachedEmbedder, EmbeddingCache
from .core.embedding.local import SentenceTransformerEmbedder
from .core.embedding.openai_embedder import OpenAIEmbedder
from .core.progress import Progress, no_progress
from .core.vector_store.qdrant import QdrantVectorStore
from .project import project_dir


class ProjectResource(dg.ConfigurableResource):
    """The user-editable inputs; relative paths are under ``root``."""

    root: str = Field(default_factory=lambda: str(project_dir()))
    corpus_dir: str = "data/corpus"
    corpus_glob: str = "**/*.md"
    chunk_configs_file: str = "data/chunk_configs.yaml"
    profiles_file: str = "data/retrieval_profiles.yaml"
    golden_dataset: str = "data/datasets/golden_token_level.jsonl"

    def path(self, relative: str) -> Path:
        return Path(self.root) / relative

    def load_configs(self) -> PipelineConfigs:
        return load_pipeline_configs(self.path(self.chunk_configs_file), self.path(self.profiles_file))

    def load_corpus(self) -> Corpus:
        return Corpus.from_folder(self.path(self.corpus_dir), glob=self.corpus_glob)

    def load_golden_dataset(self, corpus: Corpus) -> TokenLevelDataset:
        return read_token_level_jsonl(self.path(self.golden_dataset), corpus)


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
                raise dg.Failure("embedder provider 'openai' needs OPENAI_API_KEY in the environment")
            return OpenAIEmbedder(
                self.openai_model, api_key=self.openai_api_key, base_url=self.openai_base_url
            )
        raise dg.Failure(
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


def _env_secret(name: str) -> str | dg.EnvVar | None:
    """An EnvVar (shown masked in the UI) when set, else None, so nothing is required offline."""
    return dg.EnvVar(name) if os.environ.get(name) else None


def default_resources() -> dict[str, object]:
    return {
        "project": ProjectResource(),
        "embedder": EmbedderResource(
            provider=os.environ.get("RAG_EVAL_EMBEDDER", "local"),
            openai_model=os.environ.get("RAG_EVAL_OPENAI_EMBEDDING_MODEL", "text-embedding-3-small"),
            openai_api_key=_env_secret("OPENAI_API_KEY"),
            openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        ),
        "qdrant": QdrantResource(
            url=os.environ.get("QDRANT_URL") or None, api_key=_env_secret("QDRANT_API_KEY")
        ),
    }
