"""Which vector store a run uses, chosen in this one place: a Qdrant server through qdrant-client when a
URL is given (QDRANT_URL), else an embedded engine under a local folder: Qdrant's in-process engine
(``edge``, the default) or qdrant-client's local mode (``qdrant-local``, RAG_EVAL_VECTOR_ENGINE)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from ..errors import ConfigError
from ..progress import Progress, no_progress
from .edge import EdgeVectorStore

if TYPE_CHECKING:  # qdrant-client takes about a second to import: only when a run uses it
    from .qdrant import QdrantVectorStore

Engine = Literal["edge", "qdrant-local"]
ENGINES: tuple[str, ...] = get_args(Engine)
ENGINE_ENV = "RAG_EVAL_VECTOR_ENGINE"
DEFAULT_ENGINE: Engine = "edge"


def open_vector_store(
    engine: str = DEFAULT_ENGINE,
    *,
    path: str | Path | None = None,
    url: str | None = None,
    api_key: str | None = None,
    progress: Progress = no_progress,
    log: Callable[[str], None] | None = None,
) -> EdgeVectorStore | QdrantVectorStore:
    """A server when ``url`` is given (the engine is then qdrant-client whatever ``engine`` says), else
    the embedded ``engine`` with one folder per collection under ``path``. Both embedded engines can
    share a folder: each keeps its own files in a collection's folder."""
    if url:
        from .qdrant import QdrantVectorStore

        return QdrantVectorStore(url=url, api_key=api_key, progress=progress, log=log)
    if path is None:
        raise ValueError("an embedded vector store needs a folder (path=) when no server URL is given")
    if engine == "edge":
        return EdgeVectorStore(path, progress=progress, log=log)
    if engine == "qdrant-local":
        from .qdrant import QdrantVectorStore

        return QdrantVectorStore(path=path, progress=progress, log=log)
    raise ConfigError(f"unknown vector engine {engine!r} ({ENGINE_ENV}): use one of {', '.join(ENGINES)}")
