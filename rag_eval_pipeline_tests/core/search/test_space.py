"""The search space: its settings file, the candidates it makes and their names, and the rounds' nested
samples of questions and corpus blocks."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.search.candidates import SEPARATOR, candidates, chunk_configs, profiles
from rag_eval_pipeline.core.search.fidelity import Block, Round, corpus_blocks, rounds, sample_sizes
from rag_eval_pipeline.core.search.settings import (
    ChunkingChoices,
    RacingSettings,
    RetrievalChoices,
    SearchSettings,
)
from rag_eval_pipeline.core.settings.configs import NAME_PATTERN
from rag_eval_pipeline.core.settings.settings_file import load_settings
from rag_eval_pipeline.core.types import (
    CharacterSpan,
    ChunkId,
    Document,
    DocumentId,
    PositionAwareChunk,
    QuestionId,
)

REPO = Path(__file__).resolve().parents[3]


def test_the_default_space_has_24_candidates_with_partition_key_names() -> None:
    found = candidates(SearchSettings())
    assert len(found) == 24 and len({c.key for c in found}) == 24
    for c in found:
        config, profile = c.key.split(SEPARATOR)
        assert NAME_PATTERN.fullmatch(config) and NAME_PATTERN.fullmatch(profile)
    names = {c.chunk_config.name for c in found}
    assert "recursive-400-100-cl100k" in names and "token-800-200-cl100k" in names
    recursive = next(c.chunk_config for c in found if c.chunk_config.name == "recursive-400-100-cl100k")
    assert (recursive.length, recursive.tokenizer, recursive.chunk_overlap) == ("tokens", "cl100k_base", 100)
    assert {c.profile.name for c in found} == {"k5-kw0", "k5-kw0.5-rrf60"}


def test_profiles_leave_out_settings_that_change_nothing() -> None:
    found = profiles(
        RetrievalChoices(
            top_k=(3,), keyword_weight=(0.0, 1.0), rrf_k=(30.0, 60.0), similarity_threshold=(None, 0.4)
        )
    )
    names = [p.name for p in found]
    # rrf_k only matters when fused, the threshold only with a dense side
    assert names == ["k3-kw0", "k3-kw0-th0.4", "k3-kw1"]
    keyword = found[-1]
    assert (keyword.vector_weight, keyword.keyword_weight, keyword.similarity_threshold) == (0.0, 1.0, None)


def test_chunk_configs_in_characters_and_a_grid_larger_than_the_cap_is_sampled() -> None:
    chars = chunk_configs(ChunkingChoices(chunker=("fixed", "recursive"), length="characters", overlap=(0,)))
    assert [c.name for c in chars][:3] == ["fixed-200-0-chars", "fixed-400-0-chars", "fixed-800-0-chars"]
    assert all(not c.counts_tokens for c in chars)
    big = SearchSettings(
        chunking=ChunkingChoices(chunk_size=(100, 200, 300, 400, 500)),
        retrieval=RetrievalChoices(top_k=(3, 5, 10)),
        racing=RacingSettings(max_candidates=16),
    )
    sampled = candidates(big)
    assert len(sampled) == 16 and sampled == candidates(big)  # seeded: the same every time
    assert len({c.key for c in sampled}) == 16


def test_the_settings_file_is_read_and_its_errors_name_the_key(tmp_path: Path) -> None:
    path = tmp_path / "search.yaml"
    path.write_text(
        "chunking: {chunker: [token], chunk_size: [128, 256], overlap: [0]}\n"
        "retrieval: {top_k: [3, 5], keyword_weight: [0, 1]}\n"
        "budget: {wall_seconds: 600}\n"
        "racing: {first_sample: 10, growth: 3}\n"
    )
    settings = load_settings(path, SearchSettings)
    assert len(candidates(settings)) == 8 and settings.budget.wall_seconds == 600
    assert load_settings(tmp_path / "absent.yaml", SearchSettings) == SearchSettings()
    for text, message in (
        ("chunking: {chunker: [semantic]}\n", "semantic is not searched"),
        ("chunking: {overlap: [0.5, 1.5]}\n", r"chunking.overlap is a share of chunk_size in \[0, 1\)"),
        ("retrieval: {keyword_weight: [2]}\n", r"retrieval.keyword_weight is in \[0, 1\]"),
        ("retrieval: {top_k: []}\n", "retrieval.top_k must list at least one choice"),
        ("racing: {growth: 1}\n", "racing.growth must be > 1"),
        ("budget: {embedded_texts: 0}\n", "budget.embedded_texts must be > 0"),
        ("racing: {speed: 2}\n", "unknown key.*racing.speed"),
        ("racing: {distractors: 1.5}\n", r"racing.distractors must be a number in \[0, 1\]"),
        ("racing: {confirm: 0}\n", "racing.confirm must be an integer >= 1"),
        ("racing: {max_sample: 1}\n", "racing.max_sample must be an integer >= 2"),
    ):
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_settings(path, SearchSettings)
    assert (
        load_settings(REPO / "data/search.yaml", SearchSettings) == SearchSettings()
    )  # the bundled file: defaults


def corpus() -> Corpus:
    return Corpus(tuple(Document(DocumentId(f"d{i}"), "x" * 1000) for i in range(10)))


def test_rounds_grow_nested_samples_of_questions_and_corpus_blocks() -> None:
    questions = [QuestionId(f"q{i}") for i in range(50)]
    references = {
        q: [CharacterSpan(DocumentId(f"d{i % 10}"), 100, 150, "x" * 50)] for i, q in enumerate(questions)
    }

    def planned_for(order: list[QuestionId], sampling: bool = True) -> list[Round]:
        return rounds(
            order,
            references,
            corpus(),
            first_sample=5,
            growth=2,
            seed=3,
            corpus_sampling=sampling,
            block_chars=250,
        )

    planned = planned_for(questions)
    assert [len(r.questions) for r in planned] == sample_sizes(50, 5, 2) == [5, 10, 20, 40, 50]
    for earlier, later in itertools.pairwise(planned):
        assert later.questions[: len(earlier.questions)] == earlier.questions  # nested
        assert set(later.new_questions) == set(later.questions) - set(earlier.questions)
        if earlier.blocks is not None and later.blocks is not None:
            assert earlier.blocks <= later.blocks
    assert planned[-1].full_corpus and not planned[0].full_corpus
    blocks = corpus_blocks(corpus(), 250)
    assert len(blocks) == 40
    first = planned[0]
    assert first.blocks is not None and len(first.blocks) < 40
    for q in first.questions:  # every question can find its reference
        (span,) = references[q]
        assert first.keeps(span)
    assert planned_for(list(reversed(questions))) == planned  # seeded, whatever order they came in
    assert all(r.full_corpus for r in planned_for(questions, sampling=False))


def chunk(doc: str, start: int, end: int) -> PositionAwareChunk:
    return PositionAwareChunk(ChunkId(f"{doc}-{start}"), DocumentId(doc), start, end, "x" * (end - start))


def test_a_round_keeps_the_chunks_of_its_references_and_those_whose_middle_lies_in_its_blocks() -> None:
    d = DocumentId("d")
    round = Round(
        0,
        (QuestionId("q"),),
        (QuestionId("q"),),
        blocks=frozenset({Block(d, 500, 1000)}),
        references=frozenset({Block(d, 120, 140)}),
    )
    assert round.keeps(chunk("d", 100, 200))  # holds a reference
    assert round.keeps(chunk("d", 600, 700)) and round.keeps(chunk("d", 400, 800))  # middle 599 in the block
    assert not round.keeps(chunk("d", 0, 100))  # neither
    assert not round.keeps(chunk("d", 300, 600))  # shares 100 characters with the block; its middle does not
    assert not round.keeps(chunk("e", 600, 700))  # another document
    assert Round(0, (), (), None).keeps(chunk("d", 0, 100))  # the whole corpus


def test_distractors_and_max_sample_shape_the_rounds() -> None:
    questions = [QuestionId(f"q{i}") for i in range(50)]
    references = {
        q: [CharacterSpan(DocumentId(f"d{i % 10}"), 100, 150, "x" * 50)] for i, q in enumerate(questions)
    }

    def planned(**racing: object) -> list[Round]:
        settings = {"first_sample": 5, "growth": 2, "seed": 3, "corpus_sampling": True, "block_chars": 250}
        return rounds(questions, references, corpus(), **{**settings, **racing})  # type: ignore[arg-type]

    # no distractors: only the references, in every round, the last one too
    bare = planned(distractors=0.0)
    assert all(r.blocks == frozenset() and not r.full_corpus for r in bare)
    assert bare[-1].references == {Block(DocumentId(f"d{i}"), 100, 150) for i in range(10)}
    # a share of the blocks, growing with the questions asked: half of the 40 in the last round
    half = planned(distractors=0.5)
    assert [len(r.blocks or ()) for r in half] == [2, 4, 8, 16, 20] and not half[-1].full_corpus
    assert all(
        a.blocks is not None and b.blocks is not None and a.blocks <= b.blocks
        for a, b in itertools.pairwise(half)
    )
    # at most 20 questions raced
    capped = planned(max_sample=20)
    assert [len(r.questions) for r in capped] == [5, 10, 20]
    assert [len(r.questions) for r in planned(max_sample=15)] == [5, 10, 15]
    assert [len(r.questions) for r in planned(max_sample=500)] == [5, 10, 20, 40, 50]
