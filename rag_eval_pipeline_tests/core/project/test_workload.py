"""The workload estimate: chunk counts from lengths and settings, warnings above the thresholds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_eval_pipeline.core.chunking.fixed import FixedSizeChunker
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.project.workload import (
    EMBED_CHARACTERS_PER_SECOND,
    LARGE_DOCUMENT_BYTES,
    estimate_workload,
)
from rag_eval_pipeline.core.settings.configs import ChunkConfig
from rag_eval_pipeline.core.types import Document, DocumentId


def corpus_of(**texts: str) -> Corpus:
    return Corpus(tuple(Document(DocumentId(k), v) for k, v in texts.items()), root="data/corpus")


@given(length=st.integers(1, 5_000), size=st.integers(1, 300), overlap_share=st.floats(0, 0.9))
def test_the_fixed_estimate_is_the_fixed_chunkers_count(length: int, size: int, overlap_share: float):
    overlap = min(size - 1, int(size * overlap_share))
    config = ChunkConfig("c", "fixed", size, overlap)  # type: ignore[arg-type]
    document = Document(DocumentId("d"), "x" * length)
    chunks = FixedSizeChunker(size, overlap).chunk_document(document)
    assert estimate_workload(corpus_of(d=document.text), [config]).stages[0].n_chunks == len(chunks)


def test_a_small_corpus_warns_of_nothing():
    workload = estimate_workload(corpus_of(a="short text"), [ChunkConfig("c", "fixed", 200)])  # type: ignore[arg-type]
    assert workload.warnings() == () and not workload.large_documents


def test_a_large_document_is_named_with_its_size_and_the_estimate():
    big = "word " * 400_000  # 2 MB
    configs = [ChunkConfig("fixed-60-0", "fixed", 60), ChunkConfig("tok", "token", 100, 10)]  # type: ignore[arg-type]
    workload = estimate_workload(corpus_of(**{"big.md": big, "a.md": "small"}), configs)
    (large,) = workload.large_documents
    assert large.doc_id == "big.md" and large.n_bytes == 2_000_000 > LARGE_DOCUMENT_BYTES
    fixed, token = workload.stages
    assert fixed.n_chunks == math.ceil(2_000_000 / 60) + 1  # the big document's chunks and the small one
    assert token.n_chunks < fixed.n_chunks  # 100 tokens are ~400 characters
    assert fixed.embed_seconds == fixed.embedded_characters / EMBED_CHARACTERS_PER_SECOND
    document_line, corpus_line = workload.warnings()
    assert "large document big.md in data/corpus: 2.0 MB" in document_line
    assert f"about {large.n_chunks:,} chunks" in document_line
    assert "the corpus data/corpus (2 documents, 2.0 MB)" in corpus_line
    assert f"fixed-60-0: about {fixed.n_chunks:,} chunks" in corpus_line and " min" in corpus_line


def test_a_slow_stage_warns_without_a_large_document():
    texts = {f"d{i}.md": "y" * 900_000 for i in range(10)}  # 9 MB in documents under 1 MB each
    workload = estimate_workload(corpus_of(**texts), [ChunkConfig("s", "semantic", 400)])  # type: ignore[arg-type]
    assert not workload.large_documents and workload.slow_stages
    (line,) = workload.warnings()
    assert line.startswith("the corpus data/corpus (10 documents, 9.0 MB) takes ~")


@pytest.mark.parametrize("configs", [[], [ChunkConfig("c", "fixed", 100)]])  # type: ignore[arg-type]
def test_without_configs_the_large_document_is_still_named(configs: list[ChunkConfig]):
    workload = estimate_workload(corpus_of(**{"big.md": "z" * 1_500_000}), configs)
    assert workload.warnings()[0].startswith("large document big.md in data/corpus: 1.5 MB")
    assert ("chunks" in workload.warnings()[0]) == bool(configs)


def test_sizes_in_tokens_are_estimated_as_tokens_for_recursive_by_tokens_too():
    corpus = corpus_of(a="word " * 2_000)
    configs = [
        ChunkConfig("tok", "token", 100, tokenizer="cl100k_base"),  # type: ignore[arg-type]
        ChunkConfig("rec-tokens", "recursive", 100, length="tokens"),  # type: ignore[arg-type]
        ChunkConfig("rec-chars", "recursive", 100),  # type: ignore[arg-type]
    ]
    token, by_tokens, by_characters = estimate_workload(corpus, configs).stages
    assert token.n_chunks == by_tokens.n_chunks == 25  # 10,000 characters at 4 per token
    assert by_characters.n_chunks == 100


def test_a_config_applied_to_some_documents_is_estimated_on_them_alone():
    texts = {"big.md": "word " * 400_000, "a.md": "small text"}
    whole = ChunkConfig("whole", "fixed", 60)  # type: ignore[arg-type]
    scoped = ChunkConfig("scoped", "fixed", 60, documents=("a.md",))  # type: ignore[arg-type]
    estimate = estimate_workload(corpus_of(**texts), [whole, scoped])
    assert [s.n_chunks for s in estimate.stages] == [math.ceil(2_000_000 / 60) + 1, 1]


def test_an_embedding_over_the_threshold_is_announced_before_it_starts(tmp_path, minilm):
    """Issue 34: a long embedding says so with its estimate before the model is called; texts already
    cached are not counted, and a short one says nothing (a tiny injected rate stands in for a slow run)."""
    from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
    from rag_eval_pipeline.core.project.workload import AnnouncingEmbedder

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    events: list[str] = []

    class Recording:
        model_id, dimension = minilm.model_id, minilm.dimension

        def embed(self, texts):
            events.append(f"model {len(texts)}")
            return minilm.embed(texts)

    cached = CachedEmbedder(Recording(), cache)
    texts = ["the first passage about chunking", "the second passage about retrieval"]
    rate = sum(len(t) for t in texts) / 120  # these two texts: two minutes at this rate
    embedder = AnnouncingEmbedder(cached, events.append, rate=rate)
    vectors = embedder.embed(texts)
    assert events[0] == (
        f"embedding 2 texts ({minilm.model_id}): about 2 min (estimated at {rate:,.0f} characters/s, "
        "MiniLM on 2 CPU cores; texts already cached are not counted)"
    )
    assert events[1:] == ["model 2"]
    assert vectors.shape == (2, minilm.dimension) and embedder.texts_embedded == 2
    events.clear()
    embedder.embed([*texts, "x"])  # two of them cached: one character left, well under a minute
    assert events == ["model 1"]
    quiet = AnnouncingEmbedder(cached, events.append)  # the real rate: a few words take no time
    events.clear()
    quiet.embed(["a new short text"])
    assert events == ["model 1"]
