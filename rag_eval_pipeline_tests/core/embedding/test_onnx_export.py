"""The export refuses what does not reproduce the PyTorch vectors, and is made once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from rag_eval_pipeline.core.embedding import onnx_export
from rag_eval_pipeline.core.embedding.onnx_embedder import (
    MANIFEST_FILE,
    ONNX_FILE,
    export_state,
    minilm_model_path,
)
from rag_eval_pipeline.core.embedding.onnx_export import (
    SAMPLE_TEXTS,
    OnnxExportError,
    check_export,
    install,
    main,
    pytorch_vectors,
)

MODEL_DIR = Path(minilm_model_path())


def perturbed_copy(onnx_file: Path, out: Path) -> Path:
    """The export with noise on one weight matrix (about 10% of its spread): still a valid model, of
    nearly the same vectors, as a corrupted or wrongly traced weight would be."""
    model = onnx.load(str(onnx_file))
    matrices = [t for t in model.graph.initializer if len(t.dims) == 2 and min(t.dims) >= 384]
    weight = max(matrices, key=lambda t: int(np.prod(t.dims)) if "embeddings" not in t.name else 0)
    values = numpy_helper.to_array(weight)
    noisy = values + np.random.default_rng(0).normal(0, 0.1 * values.std(), values.shape).astype(values.dtype)
    weight.CopyFrom(numpy_helper.from_array(noisy, weight.name))
    onnx.save(model, str(out))
    return out


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return pytorch_vectors(MODEL_DIR, SAMPLE_TEXTS)


@pytest.mark.slow
def test_the_check_passes_the_installed_export(onnx_dir: Path, reference: np.ndarray, tmp_path: Path):
    assert check_export(onnx_dir / ONNX_FILE, MODEL_DIR, SAMPLE_TEXTS, reference, tmp_path) >= 0.9999


@pytest.mark.slow
def test_the_check_refuses_a_perturbed_weight(onnx_dir: Path, reference: np.ndarray, tmp_path: Path):
    bad = perturbed_copy(onnx_dir / ONNX_FILE, tmp_path / "bad.onnx")
    with pytest.raises(
        OnnxExportError, match=r"does not reproduce the PyTorch vectors: \d+ of 12 sample texts"
    ):
        check_export(bad, MODEL_DIR, SAMPLE_TEXTS, reference, tmp_path / "target")


@pytest.mark.slow
def test_the_check_refuses_vectors_of_another_sample(onnx_dir: Path, reference: np.ndarray, tmp_path: Path):
    with pytest.raises(OnnxExportError, match=r"nothing installed in .*target"):
        check_export(onnx_dir / ONNX_FILE, MODEL_DIR, SAMPLE_TEXTS[::-1], reference, tmp_path / "target")


@pytest.mark.slow
def test_install_installs_nothing_when_the_check_fails(
    onnx_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # the fault injected where it would arise: the exporter writes a file of wrong weights
    monkeypatch.setattr(
        onnx_export, "export_graph", lambda _model, out: perturbed_copy(onnx_dir / ONNX_FILE, out)
    )
    target = tmp_path / "export"
    with pytest.raises(OnnxExportError, match="does not reproduce the PyTorch vectors"):
        install(target)
    assert list(target.iterdir()) == []  # no model, no manifest, no staged file left behind
    assert export_state(target, MODEL_DIR) == "missing"


def copy_export(onnx_dir: Path, to: Path) -> Path:
    shutil.copytree(onnx_dir, to)
    return to


def edit_manifest(folder: Path, **changes: object) -> None:
    manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    (folder / MANIFEST_FILE).write_text(json.dumps({**manifest, **changes}), encoding="utf-8")


def test_install_skips_an_export_of_the_same_weights(onnx_dir: Path, tmp_path: Path, capsys):
    target = copy_export(onnx_dir, tmp_path / "export")
    before = (target / ONNX_FILE).stat().st_mtime_ns
    assert install(target).exported is False
    # a reinstalled wheel (new file times, same bytes) is settled by the hash: still current
    edit_manifest(target, weights_stat=[])
    assert export_state(target, MODEL_DIR) == "ready" and install(target).exported is False
    assert main(["--target", str(target)]) == 0
    assert "is current" in capsys.readouterr().out
    assert (target / ONNX_FILE).stat().st_mtime_ns == before


def test_an_export_of_other_weights_is_stale(onnx_dir: Path, tmp_path: Path):
    target = copy_export(onnx_dir, tmp_path / "export")
    edit_manifest(target, weights_stat=[], weights_sha256="0" * 64)
    assert export_state(target, MODEL_DIR) == "stale"
    (target / MANIFEST_FILE).unlink()
    assert export_state(target, MODEL_DIR) == "missing"


@pytest.mark.slow
def test_install_exports_again_over_a_stale_export(onnx_dir: Path, tmp_path: Path):
    target = copy_export(onnx_dir, tmp_path / "export")
    edit_manifest(target, weights_stat=[], weights_sha256="0" * 64)
    done = install(target)
    assert done.exported and done.min_cosine is not None and done.min_cosine >= 0.9999
    assert export_state(target, MODEL_DIR) == "ready"
    assert sorted(p.name for p in target.iterdir()) == [MANIFEST_FILE, ONNX_FILE]
    assert install(target).exported is False
