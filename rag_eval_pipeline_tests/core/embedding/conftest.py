"""The ONNX export of MiniLM, as `make setup` installs it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def onnx_dir() -> Path:
    """The installed export (made here, as `make setup` would, when it is missing: the install is
    idempotent and atomic, so parallel workers are safe)."""
    from rag_eval_pipeline.core.embedding.onnx_export import install

    return install().onnx_file.parent
