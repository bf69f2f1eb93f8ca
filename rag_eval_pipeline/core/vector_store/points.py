"""What both Qdrant engines (qdrant-client, qdrant-edge) share: a chunk's point id and payload, which
points an update of a collection must write or delete, and the hits (best first, ties in document
order: core/retrieval/hit_order.py, with every tie at the k-th score fetched), so both return the same hits for
the same points."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..embedding.base import Vectors
from ..retrieval.hit_order import best_first, same_score
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
    """Qdrant hits (``.score`` and ``.payload``) as ScoredChunks: the first ``k`` best first, ties in
    document order (core/retrieval/hit_order.py), so engines whose float sums differ in the last bits agree."""
    scored = [_scored(p.payload, p.score) for p in points]
    return best_first(scored, lambda s: s.score, lambda s: s)[:k]


def _scored(payload: Mapping[str, Any], score: float) -> ScoredChunk:
    # ``payload`` is read once a point: qdrant-edge builds a new dict from Rust at every access
    return ScoredChunk(
        chunk_id=ChunkId(payload["chunk_id"]),
        doc_id=DocumentId(payload["doc_id"]),
        start=int(payload["start"]),
        end=int(payload["end"]),
        score=float(score),
        text=str(payload.get("text", "")),
    )


# Hits asked for beyond k at first, so that a tie at the k-th score is usually seen whole in one call.
TIE_MARGIN = 5

# Searches the given query rows at a limit: each row's points, best first (as an engine returns them).
SearchAt = Callable[[Sequence[int], int], list[Sequence[Any]]]


def search_with_whole_ties(search: SearchAt, n_queries: int, k: int) -> list[list[ScoredChunk]]:
    """Each query's top ``k`` when every point tied with its k-th is among those compared: a query whose
    response is full and ends on the k-th score (more copies of a repeated passage may follow, in the
    engine's order) is asked again, deeper, until it is not; then ``top_k`` orders the ties."""
    limit = k + TIE_MARGIN
    responses = search(range(n_queries), limit)
    pending = [i for i in range(n_queries) if _tie_may_continue(responses[i], k, limit)]
    while pending:
        limit *= 2
        for i, response in zip(pending, search(pending, limit), strict=True):
            responses[i] = response
        pending = [i for i in pending if _tie_may_continue(responses[i], k, limit)]
    return [top_k(response, k) for response in responses]


def _tie_may_continue(points: Sequence[Any], k: int, limit: int) -> bool:
    return len(points) >= limit and same_score(float(points[k - 1].score), float(points[-1].score))
