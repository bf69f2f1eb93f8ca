"""What both Qdrant engines (qdrant-client, qdrant-edge) share: a chunk's point id and payload, which
points an update of a collection must write or delete, and the order of hits (best first, ties by chunk
id), so both return the same hits for the same points."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..embedding.base import Vectors
from ..types import ChunkId, DocumentId, PositionAwareChunk, sha256_hex
from .base import ScoredChunk

UPSERT_BATCH = 256
_POINT_NAMESPACE = uuid.UUID("4b6f1c9e-8a57-4c1b-9d1e-3f7c2a5e6b10")

# The payload key of what a point was made from (see ``content_hash``).
CONTENT_HASH = "content_hash"


def vector_dimension(name: str, chunks: Sequence[PositionAwareChunk], vectors: Vectors) -> int:
    """The dimension of the vectors replacing collection ``name``, one vector per chunk (0 for none)."""
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors for collection {name}")
    return int(vectors.shape[1]) if len(vectors) else 0


def point_id(chunk_id: str) -> str:
    """Qdrant wants UUIDs or integers; a UUIDv5 of the chunk id is stable across runs."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


def content_hash(chunk: PositionAwareChunk, chunk_config: str, vector: Vectors) -> str:
    """What a point is made from: the chunk (id, document, place, text), its chunk config and the exact
    bytes of its vector, so a point made by another embedder is rewritten too."""
    vector_bytes = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
    return sha256_hex(
        f"{chunk.chunk_id}\0{chunk.doc_id}\0{chunk.start}\0{chunk.end}\0{chunk_config}\0"
        f"{sha256_hex(chunk.text)}\0{hashlib.sha256(vector_bytes).hexdigest()}"
    )


def point_payload(chunk: PositionAwareChunk, chunk_config: str, vector: Vectors) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "start": chunk.start,
        "end": chunk.end,
        "chunk_config": chunk_config,
        "text": chunk.text,
        CONTENT_HASH: content_hash(chunk, chunk_config, vector),
    }


@dataclass(frozen=True)
class UpdatePlan:
    """How to make a collection hold exactly the new points: ``delete`` the stored points no new chunk
    has, write the chunks at ``write`` (new, or changed in any way), leave the others as they are."""

    delete: tuple[str, ...]
    write: tuple[int, ...]


def plan_update(stored: Mapping[str, str | None], payloads: Sequence[Mapping[str, Any]]) -> UpdatePlan:
    """``stored``: point id -> content hash of the collection's points (None: a point written without
    one, which is rewritten); ``payloads``: the new points' payloads, in chunk order."""
    wanted = {point_id(str(p["chunk_id"])): i for i, p in enumerate(payloads)}
    delete = tuple(sorted(pid for pid in stored if pid not in wanted))
    write = tuple(
        i
        for pid, i in wanted.items()
        if pid not in stored or stored[pid] is None or stored[pid] != payloads[i][CONTENT_HASH]
    )
    return UpdatePlan(delete, tuple(sorted(write)))


def batches(indices: Sequence[int], size: int = UPSERT_BATCH) -> Iterable[Sequence[int]]:
    for start in range(0, len(indices), size):
        yield indices[start : start + size]


def top_k(points: Sequence[Any], k: int) -> list[ScoredChunk]:
    """Qdrant hits (``.score`` and ``.payload``) as ScoredChunks: best first, ties at 6 decimals broken
    by chunk id, so engines whose float sums differ in the last bits still agree."""
    scored = [
        ScoredChunk(
            chunk_id=ChunkId(p.payload["chunk_id"]),
            doc_id=DocumentId(p.payload["doc_id"]),
            start=int(p.payload["start"]),
            end=int(p.payload["end"]),
            score=float(p.score),
            text=str(p.payload.get("text", "")),
        )
        for p in points
    ]
    scored.sort(key=lambda s: (-round(s.score, 6), s.chunk_id))
    return scored[:k]
