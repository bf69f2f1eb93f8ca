"""The project resource is the project's files as config; which LLM judges: none offline or when
switched off, the remote one on auto, any one when on."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.generation.settings import LLMSettings
from rag_eval_pipeline.core.llm import factory
from rag_eval_pipeline.core.project.project_files import GOLDEN_DATASET_ENV, ProjectFiles
from rag_eval_pipeline.core.project.workspace import PROJECT_DIR_ENV
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
from rag_eval_pipeline.lib.resources import LLMResource, ProjectResource, QdrantResource, default_resources

REMOTE = LLMResource(openai_api_key="sk-test", openai_base_url="http://127.0.0.1:9/v1", cache_path="")


def test_auto_judges_only_with_an_openai_protocol_endpoint():
    settings = LLMSettings()
    client = REMOTE.judge_client(settings, "auto")
    assert client is not None and client.model_id.startswith("openai:gpt-4o-mini")
    assert REMOTE.judge_client(settings, "off") is None
    # without a key, auto never judges, even with the local model installed
    assert LLMResource(cache_path="").judge_client(settings, "auto") is None
    assert LLMResource(provider="local", cache_path="").judge_client(settings, "auto") is None


def test_a_profile_judge_model_overrides_the_configured_model():
    client = LLMResource(openai_api_key="sk-test", model="gpt-4o", cache_path="").judge_client(
        LLMSettings(), "on", model="gpt-4.1-mini"
    )
    assert client is not None and client.model.model_name == "gpt-4.1-mini"


def test_judging_on_without_any_llm_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(factory, "smollm2_available", lambda: False)
    with pytest.raises(ConfigError, match="llm_judging: on .* needs an LLM"):
        LLMResource(cache_path="").judge_client(LLMSettings(), "on")


def test_the_project_resource_reads_the_files_its_config_names(tiny_project: Path):
    assert ProjectResource(root=str(tiny_project)).files() == ProjectFiles(tiny_project)
    moved = ProjectResource(root=str(tiny_project), corpus_dir="data/corpus/alpha", corpus_glob="*.md")
    assert moved.files() == ProjectFiles(tiny_project, corpus_dir="data/corpus/alpha", corpus_glob="*.md")
    assert {d.doc_id for d in moved.load_corpus().documents} == {"pumps.md", "valves.md"}


def test_the_default_resources_are_the_configured_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(PROJECT_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(GOLDEN_DATASET_ENV, "data/datasets/other.jsonl")
    resources = default_resources()
    project = resources["project"]
    assert isinstance(project, ProjectResource)
    assert project.files() == ProjectFiles(tmp_path.resolve(), golden_dataset="data/datasets/other.jsonl")
    qdrant = resources["qdrant"]
    assert isinstance(qdrant, QdrantResource) and qdrant.local_path == str(tmp_path.resolve() / "data/qdrant")
    assert qdrant.engine == "edge" and isinstance(qdrant.get(), EdgeVectorStore)
    monkeypatch.setenv("RAG_EVAL_VECTOR_ENGINE", "qdrant-local")
    local = default_resources()["qdrant"]
    assert isinstance(local, QdrantResource) and isinstance(local.get(), QdrantVectorStore)
