from pathlib import Path

import pytest

# Variables of the developer's shell that would point `rag-eval` at another instance, server or key.
OUTSIDE = (
    "DAGSTER_HOME",
    "OPENAI_API_KEY",
    "QDRANT_URL",
    "LANGSMITH_API_KEY",
    "RAG_EVAL_WAREHOUSE_DIR",
    "RAG_EVAL_GOLDEN_DATASET",
)


@pytest.fixture
def project(tiny_project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny project as `rag-eval` finds it when called in process (`main`): RAG_EVAL_PROJECT_DIR,
    its own dagster.yaml instance, nothing of the developer's shell."""
    monkeypatch.setenv("RAG_EVAL_PROJECT_DIR", str(tiny_project))
    for name in OUTSIDE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tiny_project)  # main() changes directory; monkeypatch changes it back
    return tiny_project
