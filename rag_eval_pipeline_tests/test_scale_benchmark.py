"""benchmarks/scale.py at a tiny size: the stand-in embedder and the synthetic data are deterministic,
and every section of the report is printed (no wall-clock figure is asserted)."""

from __future__ import annotations

import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from rag_eval_pipeline.core.chunking import build_chunker
from rag_eval_pipeline.core.chunking.base import cut_corpus
from rag_eval_pipeline.core.embedding.base import Embedder

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scale_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


bench = _load_script()


def test_the_stand_in_embedder_gives_a_text_the_same_vector_in_any_instance_batch_or_order() -> None:
    texts = ["Fagaro gotobeto putova depa.", "putova depa vuma", "", "Kuvisadu nusokora pale."]
    first = bench.StandInEmbedder()
    assert isinstance(first, Embedder) and first.model_id == "stand-in:hash-bow-384"
    vectors = first.embed(texts)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    again = bench.StandInEmbedder()
    reversed_ = again.embed(texts[::-1])[::-1]
    one_by_one = np.vstack([bench.StandInEmbedder().embed([t]) for t in texts])
    assert np.array_equal(vectors, reversed_) and np.array_equal(vectors, one_by_one)
    # a bag of words: texts sharing words are closer than texts sharing none
    assert vectors[0] @ vectors[1] > 0.3 > abs(float(vectors[0] @ vectors[3]))


def test_the_synthetic_corpus_has_exactly_the_chunks_asked_for_and_questions_about_its_sentences() -> None:
    config = bench.chunk_config()
    corpus, sentences = bench.synth_corpus(250, build_chunker(config))
    again, _ = bench.synth_corpus(250, build_chunker(config))
    assert corpus == again and [d.text for d in corpus] == [d.text for d in again]
    chunks = cut_corpus(build_chunker(config), corpus, config.name).chunks
    assert len(chunks) == 250 and len({c.text for c in chunks}) == 250
    dataset = bench.synth_questions(corpus, sentences, 20)
    assert dataset.sha256 == bench.synth_questions(corpus, sentences, 20).sha256
    assert [e.question_id for e in dataset][:2] == ["scale-0001", "scale-0002"]
    for example in dataset:
        (span,) = example.relevant_spans
        assert corpus[span.doc_id].text[span.start : span.end] == span.text
        assert set(example.query.split()[:-1]) <= set(span.text.lower().rstrip(".").split())


def test_the_growth_exponent_is_the_slope_on_log_log_axes() -> None:
    assert bench.exponent(1000, 1.0, 10_000, 10.0) == pytest.approx(1.0)
    assert bench.exponent(1000, 1.0, 2000, 4.0) == pytest.approx(2.0)
    assert bench.exponent(1000, 2.0, 4000, 2.0) == pytest.approx(0.0)
    assert bench.exponent(1000, 0.0, 2000, 1.0) is None


def test_a_tiny_run_prints_every_section_and_falls_back_when_edge_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "edge_missing", lambda: "no edge here")
    out = io.StringIO()
    results = bench.run([120, 240], 12, 1, "edge", tmp_path, out)
    text = out.getvalue()
    assert text.startswith("machine: ") and " cores, Python " in text
    assert "engine: edge is not available (no edge here); falling back to qdrant-local" in text
    assert [b["n_chunks"] for _, b, _ in results] == [120, 240]
    for size in ("120", "240"):
        block = text[text.index(f"\n== {size} chunks") :].split("\n\n", 1)[0]
        for label in ("corpus", "chunking", "cache", "upsert", "warm build", "parquet", "memory", "open"):
            assert re.search(rf"^{label} ", block, re.MULTILINE), (size, label)
        assert f"({size} points written;" in block and "knn side" in block and "(0 points written)" in block
        assert "(loaded, not rebuilt)" in block and "0 embedded, all hits" in block
        for name in ("dense-top5", "hybrid-top5", "keyword-top5"):
            assert re.search(rf"^(?:batch)? +{name} +retrieve\(12\) ", block, re.MULTILINE), name
            assert re.search(rf"^ +{name} +e2e [0-9.]+ / [0-9.]+", block, re.MULTILINE), name
        assert re.search(r"same top-5 as numpy \d+/12", block)
        assert re.search(r"knn hits in numpy's top-20 \d+/12", block)
    growth = text[text.index("\ngrowth exponent per stage") :]
    assert re.search(r"^upsert s +[0-9.]+ +[0-9.]+ +-?[0-9.]+$", growth, re.MULTILINE)
    assert re.search(r"^dense knn p50 ms ", growth, re.MULTILINE)
    goals = text[text.index("\ngoals at 240 chunks") :]
    assert len(re.findall(r" (?:met|NOT met)$", goals, re.MULTILINE)) == 3
    assert list(tmp_path.iterdir()) == []  # each size's files are removed once measured
