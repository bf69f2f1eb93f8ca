"""A Qdrant collection folder held as another run holds it, so a test can act while an evaluation is
in the middle of a step: the step that opens the collection waits for its lock (``edge.lock``, polled
by core/vector_store/edge.py) until the test lets go."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag_eval_pipeline.core.embedding.onnx_embedder import MINILM_MODEL_ID
from rag_eval_pipeline.core.vector_store.base import collection_name


@contextmanager
def held_collection(project: Path, chunk_config: str) -> Iterator[Path]:
    """The collection folder of ``chunk_config`` (the default model) in ``project``, locked until exit."""
    folder = project / "data" / "qdrant" / collection_name(chunk_config, MINILM_MODEL_ID)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "edge.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
