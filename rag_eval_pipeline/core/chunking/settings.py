"""What every chunker does with its settings: check them once, and fingerprint them the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..types import sha256_hex


def check_sizes(chunk_size: int, chunk_overlap: int) -> None:
    """Reject settings that would loop forever or emit nothing (chunkers are also built without configs)."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"chunk_overlap must lie in [0, chunk_size={chunk_size}), got {chunk_overlap}")


def settings_fingerprint(kind: str, settings: Mapping[str, object]) -> str:
    """``kind:sha256(settings)``; settings are JSON-encoded with sorted keys so order never matters."""
    return f"{kind}:{sha256_hex(json.dumps(dict(settings), sort_keys=True, default=list))}"
