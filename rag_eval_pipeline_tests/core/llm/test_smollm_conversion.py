"""The conversion of SmolLM2's GGUF file into a transformers folder (smollm_conversion.py): installed by
`make local-llm`, loaded in its place while it is of the same file, checked tensor by tensor."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from rag_eval_pipeline.core.llm.local_smollm import (
    CONVERSION_MANIFEST,
    SmolLM2ChatModel,
    _load,
    conversion_state,
    default_conversion_dir,
    default_gguf_path,
    gguf_stat,
    load_files,
)
from rag_eval_pipeline.core.llm.smollm_conversion import (
    CONVERSION_COMMAND,
    ConversionError,
    check_conversion,
    install,
)


@pytest.fixture(scope="module")
def smollm() -> SmolLM2ChatModel:
    """The model as a process loads it (once per process)."""
    model = SmolLM2ChatModel()
    model.load()
    return model


def test_the_model_loads_from_the_conversion_make_setup_installs(smollm: SmolLM2ChatModel) -> None:
    gguf = default_gguf_path()
    assert gguf is not None
    assert conversion_state(default_conversion_dir(), gguf) == "ready", f"run `{CONVERSION_COMMAND}`"
    assert _load(gguf).source == default_conversion_dir()
    manifest = json.loads((default_conversion_dir() / CONVERSION_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["tensors_identical"] > 200 and manifest["gguf_stat"] == gguf_stat(gguf)
    assert install().converted is False  # current: nothing is done again


def test_a_conversion_of_another_file_is_stale_and_a_touched_copy_still_ready(tmp_path: Path) -> None:
    gguf = default_gguf_path()
    assert gguf is not None
    folder = tmp_path / "conversion"
    assert conversion_state(folder, gguf) == "missing"
    folder.mkdir()
    shutil.copy(default_conversion_dir() / CONVERSION_MANIFEST, folder / CONVERSION_MANIFEST)
    copy = shutil.copy(gguf, tmp_path / gguf.name)  # a reinstall: another mtime, the same bytes
    assert conversion_state(folder, Path(copy)) == "ready"
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF another model")
    assert conversion_state(folder, other) == "stale"


def test_the_check_refuses_a_changed_tensor_or_tokenizer(smollm: SmolLM2ChatModel) -> None:
    import torch

    loaded = _load(default_gguf_path())
    expected = (loaded.tokenizer, loaded.model)
    assert check_conversion(expected, expected) > 200
    tokenizer, model = load_files(default_conversion_dir())
    with torch.no_grad():
        next(iter(model.parameters()))[0, 0] += 1e-6
    with pytest.raises(ConversionError, match="tensors differ"):
        check_conversion(expected, (loaded.tokenizer, model))
    tokenizer.add_tokens(["pump"])
    with pytest.raises(ConversionError, match="tokenizers differ"):
        check_conversion(expected, (tokenizer, loaded.model))


def test_install_writes_the_manifest_last_and_nothing_when_the_check_fails(
    smollm: SmolLM2ChatModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GGUF load (~40 CPU s) is the loaded model here: what is tested is install's handling of files."""
    from rag_eval_pipeline.core.llm import smollm_conversion

    loaded = _load(default_gguf_path())
    monkeypatch.setattr(smollm_conversion, "load_files", lambda source: (loaded.tokenizer, loaded.model))
    monkeypatch.setattr(smollm_conversion, "_plain", lambda model: model)
    target = tmp_path / "share" / "smollm"

    def refuse(expected: object, converted: object) -> int:
        raise ConversionError("1 tensors differ")

    monkeypatch.setattr(smollm_conversion, "check_conversion", refuse)
    with pytest.raises(ConversionError):
        install(target)
    assert not target.exists() and list(target.parent.iterdir()) == []  # the scratch folder is gone too

    monkeypatch.undo()
    monkeypatch.setattr(smollm_conversion, "load_files", lambda source: (loaded.tokenizer, loaded.model))
    done = install(target)
    assert done.converted and conversion_state(target, default_gguf_path()) == "ready"  # type: ignore[arg-type]
    assert {"config.json", "model.safetensors", "tokenizer.json", CONVERSION_MANIFEST} <= {
        p.name for p in target.iterdir()
    }
    assert all(p.stat().st_mode & 0o044 == 0o044 for p in target.iterdir())  # readable by every user
    assert list(target.parent.iterdir()) == [target]


def test_a_damaged_conversion_is_passed_over_for_the_gguf_file_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_eval_pipeline.core.llm import local_smollm

    installed = default_gguf_path()
    assert installed is not None
    gguf = Path(shutil.copy(installed, tmp_path / installed.name))  # the same bytes: its conversion is ready
    damaged = tmp_path / "conversion"
    shutil.copytree(default_conversion_dir(), damaged, ignore=shutil.ignore_patterns("model.safetensors"))
    (damaged / "model.safetensors").write_bytes(b"not safetensors")
    assert conversion_state(damaged, gguf) == "ready"
    monkeypatch.setattr(local_smollm, "default_conversion_dir", lambda: damaged)
    monkeypatch.setattr(local_smollm, "_loaded", {})  # this process's loaded model stays as it is
    read: list[Path] = []
    gguf_model = SimpleNamespace(eval=lambda: None, config=SimpleNamespace(max_position_embeddings=2048))

    def load(source: Path) -> tuple[object, object]:  # the GGUF file's ~40 CPU s left out
        read.append(source)
        return load_files(source) if source == damaged else ("tokenizer", gguf_model)

    monkeypatch.setattr(local_smollm, "load_files", load)
    with pytest.warns(UserWarning, match=r"conversion in .* is unreadable \(.*\): loading the GGUF file"):
        loaded = _load(gguf)
    assert read == [damaged, gguf] and loaded.source == gguf and loaded.model is gguf_model
