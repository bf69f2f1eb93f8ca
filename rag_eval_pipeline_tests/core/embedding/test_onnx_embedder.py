"""The ONNX MiniLM (as `make setup` exports it) against the sentence-transformers one, and the default
resource path without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.embedding.local import SentenceTransformerEmbedder
from rag_eval_pipeline.core.embedding.onnx_embedder import (
    MINILM_DIMENSION,
    MINILM_MODEL_ID,
    ONNX_BATCH_SIZE,
    ONNX_DIR_ENV,
    ONNX_FILE,
    OnnxEmbedder,
)
from rag_eval_pipeline.core.embedding.onnx_export import SAMPLE_TEXTS
from rag_eval_pipeline.core.settings.configs import load_chunk_configs

REPO = Path(__file__).resolve().parents[3]


def demo_chunks(config: str = "recursive-400-50") -> list[str]:
    corpus = Corpus.from_folder(REPO / "data" / "corpus")
    chosen = {c.name: c for c in load_chunk_configs(REPO / "data" / "chunk_configs.yaml")}[config]
    return [c.text for c in cut_corpus(build_chunker(chosen), corpus, config).chunks]


def demo_questions() -> list[str]:
    lines = (REPO / "data" / "datasets" / "golden_token_level.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["inputs"]["query"] for line in lines if line.strip()]


@pytest.mark.slow
def test_onnx_vectors_are_the_pytorch_vectors_and_find_the_same_neighbours(onnx_dir: Path):
    onnx, torch = OnnxEmbedder(onnx_dir / ONNX_FILE), SentenceTransformerEmbedder()
    assert onnx.model_id == torch.model_id == MINILM_MODEL_ID  # cached vectors stay valid
    chunks, questions = demo_chunks()[:100], demo_questions()[:20]
    texts = [*SAMPLE_TEXTS, *chunks, *questions]
    ours, theirs = onnx.embed(texts), torch.embed(texts)
    cosines = np.sum(ours * theirs, axis=1)
    assert cosines.min() >= 0.9999, texts[int(np.argmin(cosines))]
    # the same 10 nearest chunks of every question, in the same order
    ours_q, theirs_q = ours[-len(questions) :], theirs[-len(questions) :]
    ours_c, theirs_c = ours[len(SAMPLE_TEXTS) : -len(questions)], theirs[len(SAMPLE_TEXTS) : -len(questions)]
    top = lambda q, c: np.argsort(-(q @ c.T), axis=1, kind="stable")[:, :10]  # noqa: E731
    np.testing.assert_array_equal(top(ours_q, ours_c), top(theirs_q, theirs_c))


def test_onnx_embedder_is_an_embedder_of_normalised_float32_rows_in_input_order(onnx_dir: Path):
    embedder = OnnxEmbedder(onnx_dir / ONNX_FILE, batch_size=2)
    assert isinstance(embedder, Embedder) and embedder.dimension == MINILM_DIMENSION
    texts = [
        "The capital of France is Paris",
        "a",
        "Paris is France's capital city",
        "The pump runs at 1,450 rpm",
    ]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, MINILM_DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[2] > 0.8 > vectors[0] @ vectors[3]
    # batches sorted by length inside; rows come back in input order, whatever the batch
    np.testing.assert_allclose(embedder.embed(texts[::-1]), vectors[::-1], atol=1e-5)
    np.testing.assert_allclose(embedder.embed([texts[2]])[0], vectors[2], atol=1e-5)
    assert embedder.embed([]).shape == (0, MINILM_DIMENSION)


def test_onnx_embedder_truncates_at_the_models_256_tokens(onnx_dir: Path):
    embedder = OnnxEmbedder(onnx_dir / ONNX_FILE)
    words = [f"word{i}" for i in range(400)]  # several tokens a word: far past 256
    long, short = " ".join(words), " ".join(words[:30])
    vectors = embedder.embed([long, long + " and a different ending about pumps", short])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert len(embedder.loaded.tokenizer.encode(long).ids) == 256  # not tokenizer.json's own 128
    assert vectors[0] @ vectors[2] < 0.999


def test_a_missing_export_is_a_clear_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=r"missing\.onnx: no ONNX export .* run `make setup`"):
        OnnxEmbedder(tmp_path / "missing.onnx").embed(["a text"])


DEFAULT_PATH = """
import json, sys, warnings
warnings.simplefilter("error")  # no fallback warning on this path
from rag_eval_pipeline.lib.resources import EmbedderResource
embedder = EmbedderResource(cache_path=sys.argv[1]).get()
vectors = embedder.embed(["The capital of France is Paris", "The pump runs at 1,450 rpm"])
running = embedder.inner
print(json.dumps({
    "inner": type(running).__name__,
    "batch": running.batch_size,
    "shape": list(vectors.shape),
    "heavy": sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules),
}))
"""


def run_default_path(tmp_path: Path, **env: str) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, "-c", DEFAULT_PATH, str(tmp_path / "embeddings.sqlite")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_the_default_local_embedder_runs_without_torch(onnx_dir: Path, tmp_path: Path):
    found, _ = run_default_path(tmp_path, **{ONNX_DIR_ENV: str(onnx_dir)})
    # onnxruntime's small passes (ONNX_BATCH_SIZE), not the resource's sentence-transformers batch
    assert found == {
        "inner": "OnnxEmbedder",
        "batch": ONNX_BATCH_SIZE,
        "shape": [2, MINILM_DIMENSION],
        "heavy": [],
    }


FALLBACK = """
import sys, warnings
from rag_eval_pipeline.lib.resources import EmbedderResource
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    resource = EmbedderResource(cache_path=sys.argv[1])
    first, second = resource.model(), resource.model()
print(type(first).__name__, type(second).__name__, first.embed(["a text"]).shape)
print(len(said), said[0].message if said else "")
"""


@pytest.mark.slow
def test_without_the_export_the_local_embedder_is_sentence_transformers_with_one_warning(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", FALLBACK, str(tmp_path / "embeddings.sqlite")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, ONNX_DIR_ENV: str(tmp_path / "no-export")},
    )
    assert done.returncode == 0, done.stderr
    kinds, warned = done.stdout.splitlines()[-2:]
    assert kinds == f"SentenceTransformerEmbedder SentenceTransformerEmbedder (1, {MINILM_DIMENSION})"
    assert warned.startswith("1 ") and "is not installed" in warned
    assert "python -m rag_eval_pipeline.core.embedding.onnx_export" in warned and "make setup" in warned
