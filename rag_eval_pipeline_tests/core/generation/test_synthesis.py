"""synthesize_*: the questions and the passages the retrievability probe searches reach the model in one
call, each distinct text once, and a re-run through the cache embeds nothing."""

from __future__ import annotations

from pathlib import Path

from rag_eval_pipeline.core.chunking import build_chunker, chunk_corpus
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.generation.quality import (
    PROBE_CONFIG,
    deduplicate,
    filter_unretrievable_chunk_level,
    filter_unretrievable_token_level,
    probe_config,
    probe_windows,
)
from rag_eval_pipeline.core.generation.settings import ChunkLevelSettings, TokenLevelSettings
from rag_eval_pipeline.core.generation.synthesis import synthesize_chunk_level, synthesize_token_level
from rag_eval_pipeline.core.settings.configs import ChunkConfig
from rag_eval_pipeline.core.types import ChunkConfigName
from rag_eval_pipeline_tests.conftest import tiny_corpus
from rag_eval_pipeline_tests.fakes import CountingEmbedder, HashingEmbedder

# the probe path: the retrievability filter on, known-item questions (they embed nothing themselves)
TOKEN_LEVEL = TokenLevelSettings(
    generator="known-item", n_questions=6, passage_min_chars=40, retrievability_top_n=20
)


def test_token_level_questions_and_probe_passages_in_one_model_call(tmp_path: Path) -> None:
    corpus = tiny_corpus()
    model = CountingEmbedder(HashingEmbedder())
    made = synthesize_token_level(corpus, TOKEN_LEVEL, CachedEmbedder(model, EmbeddingCache(tmp_path / "e")))
    (call,) = model.calls
    assert len(call) == len(set(call)) and {w.text for w in probe_windows(corpus)} <= set(call)
    assert len(made.dataset) > 0

    # the same questions and rejections as each filter embedding on its own
    alone = HashingEmbedder()
    plain = synthesize_token_level(corpus, TOKEN_LEVEL, alone)
    assert plain.dataset.examples == made.dataset.examples and plain.rejections == made.rejections
    assert alone.calls == 1
    generated = synthesize_token_level(
        corpus,
        TokenLevelSettings(
            generator="known-item",
            n_questions=6,
            passage_min_chars=40,
            dedup_threshold=1.0,
            retrievability_top_n=0,
        ),
        HashingEmbedder(),
    )
    unique = deduplicate(generated.dataset.examples, HashingEmbedder(), TOKEN_LEVEL.dedup_threshold)
    tied = filter_unretrievable_token_level(
        unique.examples, corpus, HashingEmbedder(), TOKEN_LEVEL.retrievability_top_n
    )
    assert tied.examples == made.dataset.examples

    synthesize_token_level(corpus, TOKEN_LEVEL, CachedEmbedder(model, EmbeddingCache(tmp_path / "e")))
    assert len(model.calls) == 1  # a re-run: everything from the cache


def test_paraphrase_questions_embed_once_and_not_again_through_the_cache(tmp_path: Path) -> None:
    """The offline default: its word and sentence vectors in one call, the de-duplication in another,
    and a re-run through the embedding cache calls the model no more."""
    corpus = tiny_corpus()
    model = CountingEmbedder(HashingEmbedder())
    settings = TokenLevelSettings(n_questions=6, passage_min_chars=40)
    made = synthesize_token_level(corpus, settings, CachedEmbedder(model, EmbeddingCache(tmp_path / "e")))
    assert made.generator == "paraphrase" and len(made.dataset) > 0
    assert len(model.calls) == 2 and all(len(call) == len(set(call)) for call in model.calls)
    again = synthesize_token_level(corpus, settings, CachedEmbedder(model, EmbeddingCache(tmp_path / "e")))
    assert len(model.calls) == 2 and again.dataset.examples == made.dataset.examples


def test_chunk_level_questions_and_chunks_in_one_model_call(tmp_path: Path) -> None:
    config = ChunkConfig(ChunkConfigName("fixed-60-0"), "fixed", 60, 0)
    chunks = chunk_corpus(build_chunker(config), tiny_corpus())
    model = CountingEmbedder(HashingEmbedder())
    settings = ChunkLevelSettings(max_chunks=4, retrievability_top_n=20)
    made = synthesize_chunk_level(
        chunks, "fp", settings, CachedEmbedder(model, EmbeddingCache(tmp_path / "e"))
    )
    (call,) = model.calls
    assert len(call) == len(set(call)) and {c.text for c in chunks} <= set(call)
    generated = synthesize_chunk_level(
        chunks,
        "fp",
        ChunkLevelSettings(max_chunks=4, dedup_threshold=1.0, retrievability_top_n=0),
        HashingEmbedder(),
    )
    unique = deduplicate(generated.dataset.examples, HashingEmbedder(), settings.dedup_threshold)
    tied = filter_unretrievable_chunk_level(
        unique.examples, chunks, HashingEmbedder(), settings.retrievability_top_n
    )
    assert len(made.dataset) > 0 and tied.examples == made.dataset.examples


def config(name: str, chunker: str, size: int, overlap: int = 0, **more: object) -> ChunkConfig:
    return ChunkConfig(ChunkConfigName(name), chunker, size, overlap, **more)  # type: ignore[arg-type]


def test_the_probe_searches_a_configured_chunk_configs_chunks_nearest_its_own_size() -> None:
    """Issue 34: the probe embeds chunks a chunk_index embeds anyway, not passages of its own."""
    assert probe_config(()) == PROBE_CONFIG  # nothing configured: its own passages
    small, large = config("fixed-60", "fixed", 60), config("recursive-600", "recursive", 600, 100)
    tokens = config("token-100", "token", 100)  # 100 tokens: about 400 characters
    assert probe_config([small, large]) == large and probe_config([small, large, tokens]) == tokens
    # a config cut as the probe cuts wins whatever its name or place, and cuts the very same passages
    alike = config("recursive-400-50", "recursive", 400, 50)
    assert probe_config([tokens, alike]) == alike
    corpus = tiny_corpus()
    assert probe_windows(corpus, [alike]) == probe_windows(corpus)
    # a config over some documents only, or one that cuts with the embedder, cannot serve
    assert probe_config([config("some", "recursive", 400, 50, documents=("alpha/pumps.md",))]) == PROBE_CONFIG
    semantic = config("semantic", "semantic", 400)
    assert probe_config([semantic, small]) == small


def test_the_token_level_probe_embeds_the_chunk_configs_chunks_and_nothing_when_off(tmp_path: Path) -> None:
    corpus = tiny_corpus()
    chunking = config("fixed-60", "fixed", 60)
    model = CountingEmbedder(HashingEmbedder())
    made = synthesize_token_level(
        corpus, TOKEN_LEVEL, CachedEmbedder(model, EmbeddingCache(tmp_path / "e")), probe_configs=[chunking]
    )
    (call,) = model.calls
    chunks = {c.text for c in chunk_corpus(build_chunker(chunking), corpus)}
    questions = {e.query for e in made.dataset} | {r.question for r in made.rejections if r.question}
    assert chunks <= set(call) and set(call) <= chunks | questions  # its chunks, found cached later
    assert made.describe_filters().endswith(f"retrievability (source in the top 20 of {model.model_id}) 0")
    off = CountingEmbedder(HashingEmbedder())
    synthesize_token_level(
        corpus,
        TokenLevelSettings(generator="known-item", n_questions=6, passage_min_chars=40),
        off,
        probe_configs=[chunking],
    )
    assert set(off.calls[0]) <= questions  # the questions alone: nothing searched, nothing cut
