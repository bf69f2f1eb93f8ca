"""Embeddings from an OpenAI-protocol endpoint (OpenAI, Azure-style gateways, vLLM, Ollama)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import Vectors

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """The `openai` SDK does the retrying (``max_retries`` with backoff on 429, 5xx and timeouts)."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 256,
        max_retries: int = 5,
        timeout: float = 60.0,
        dimensions: int | None = None,
        client: Any = None,
    ) -> None:
        if client is None:
            from openai import OpenAI

            client = OpenAI(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout)
        self._client = client
        self.model = model
        self.batch_size = batch_size
        self._dimensions = dimensions

    @property
    def model_id(self) -> str:
        suffix = f"@{self._dimensions}" if self._dimensions else ""
        return f"openai:{self.model}{suffix}"

    @property
    def dimension(self) -> int:
        if self._dimensions is None:
            self._dimensions = KNOWN_DIMENSIONS.get(self.model) or int(
                self.embed(["dimension probe"]).shape[1]
            )
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = list(texts[i : i + self.batch_size])
            extra = {"dimensions": self._dimensions} if self._dimensions else {}
            response = self._client.embeddings.create(model=self.model, input=batch, **extra)
            ordered = sorted(response.data, key=lambda item: item.index)
            if len(ordered) != len(batch):
                raise RuntimeError(
                    f"embedding endpoint returned {len(ordered)} vectors for {len(batch)} texts (model {self.model})"
                )
            rows.extend(item.embedding for item in ordered)
        if not rows:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        vectors = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
