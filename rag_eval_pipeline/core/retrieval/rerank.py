"""Cross-encoder reranking as an optional plug-in, loaded from a local folder and never from a hub."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rag_eval_pipeline.core.errors import ConfigError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

DEFAULT_BATCH_SIZE = 32
DEFAULT_MAX_LENGTH = 512

_REMEDY = (
    "put a sentence-transformers CrossEncoder folder there (config.json + weights), "
    "or set `reranker: none` in the profile"
)


@runtime_checkable
class Reranker(Protocol):
    """Scores query/passage pairs for a second-stage ranking.

    A protocol, not a base class: no reranker ships with the package (no registry package carries
    cross-encoder weights), so it stays a swappable plug-in, off by default, and tests or other model
    families can stand in without inheriting from anything.
    """

    @property
    def model_id(self) -> str:
        """Identifies the model and its version; goes into result rows so runs stay comparable."""
        ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage, in input order; higher is better."""
        ...


class RerankerError(ConfigError):
    """The configured reranker cannot be used; the message names the path and the remedy."""


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder read from a local folder, on CPU, with no network access."""

    def __init__(
        self,
        path: str | Path,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        folder = Path(path)
        config = _checked_config(folder)
        self.path = folder
        self.batch_size = batch_size
        self._model_id = f"cross-encoder:{folder.resolve().name}:{hashlib.sha256(config).hexdigest()[:12]}"
        self._model = _load_cross_encoder(folder, max_length)

    @property
    def model_id(self) -> str:
        return self._model_id

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        pairs = [(query, passage) for passage in passages]
        scores = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return [float(value) for value in scores.tolist()]


def _checked_config(folder: Path) -> bytes:
    """Reject what CrossEncoder would load silently with a freshly initialised (random) score head."""
    if not folder.exists():
        raise RerankerError(f"reranker path {folder} does not exist: {_REMEDY}")
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise RerankerError(
            f"reranker path {folder} has no config.json, so it is not a model folder: {_REMEDY}"
        )
    raw = config_path.read_bytes()
    try:
        config = json.loads(raw)
    except ValueError as exc:
        raise RerankerError(
            f"reranker path {folder}: config.json is not valid JSON ({exc}): {_REMEDY}"
        ) from exc
    architectures = config.get("architectures") if isinstance(config, dict) else None
    if (folder / "modules.json").is_file():
        if _sentence_transformers_type(folder) != "CrossEncoder":
            raise RerankerError(
                f"reranker path {folder} holds a sentence-transformers embedding model, not a cross-encoder "
                f"(its score head would be random): {_REMEDY}"
            )
    elif not any(str(name).endswith("ForSequenceClassification") for name in architectures or []):
        raise RerankerError(
            f"reranker path {folder}: config.json declares architectures {architectures!r}, not a "
            f"*ForSequenceClassification cross-encoder (its score head would be random): {_REMEDY}"
        )
    return raw


def _sentence_transformers_type(folder: Path) -> str:
    """sentence-transformers treats a folder without a declared model_type as an embedding model."""
    try:
        declared = json.loads((folder / "config_sentence_transformers.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "SentenceTransformer"
    if not isinstance(declared, dict):
        return "SentenceTransformer"
    return str(declared.get("model_type", "SentenceTransformer"))


def _load_cross_encoder(folder: Path, max_length: int) -> CrossEncoder:
    from sentence_transformers import CrossEncoder

    try:
        # local_files_only: a local folder must never fall back to a hub download
        model: CrossEncoder = CrossEncoder(
            str(folder), device="cpu", local_files_only=True, max_length=max_length
        )
    except Exception as exc:  # transformers raises OSError, ValueError, safetensors errors, ...
        raise RerankerError(
            f"reranker path {folder} is not a loadable cross-encoder ({exc!r}): {_REMEDY}"
        ) from exc
    if model.num_labels != 1:
        raise RerankerError(
            f"reranker path {folder} is a classifier with {model.num_labels} labels, not a relevance scorer "
            f"with one output: {_REMEDY}"
        )
    model.eval()  # dropout off: the same pairs give the same scores
    return model


_loaded: dict[str, CrossEncoderReranker] = {}
_loaded_lock = threading.Lock()


def load_reranker(path: str | Path) -> CrossEncoderReranker:
    """One instance per resolved folder per process: loading costs seconds and ~100 MB."""
    key = str(Path(path).resolve())
    with _loaded_lock:
        if key not in _loaded:
            _loaded[key] = CrossEncoderReranker(key)
        return _loaded[key]
