"""Where the project's data lives: RAG_EVAL_PROJECT_DIR, else the checkout this package runs from."""

from __future__ import annotations

import os
from pathlib import Path

# Where `make ui` (`dagster dev`) listens: what `rag-eval run --launch` submits to by default.
DEFAULT_LAUNCH_URL = "http://127.0.0.1:3000"


def project_dir() -> Path:
    configured = os.environ.get("RAG_EVAL_PROJECT_DIR")
    if configured:
        return Path(configured).resolve()
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "data").is_dir():
        return checkout
    return Path.cwd()
