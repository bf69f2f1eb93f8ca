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


# The rules every chunker's cut shares (base.chunks_from_spans); a change of them that can change chunks
# bumps this, so chunks stored by an older cut are cut again rather than reused (chunking/reuse.py) and
# chunk-level ground truth made from them is refused. 2: whitespace-only chunks are dropped.
CUT_RULES_VERSION = 2


def settings_fingerprint(kind: str, settings: Mapping[str, object]) -> str:
    """``kind:sha256(settings and the cut rules' version)``; JSON with sorted keys, so order never
    matters."""
    versioned = {**settings, "cut_rules": CUT_RULES_VERSION}
    return f"{kind}:{sha256_hex(json.dumps(versioned, sort_keys=True, default=list))}"
