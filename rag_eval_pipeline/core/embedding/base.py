"""What the pipeline needs from an embedding model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors, one row per text, in input order."""

    @property
    def model_id(self) -> str:
        """Identifies the model and its settings; part of every cache key and collection name."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...
