"""The question plan's choices, without a model: which setups the pilot evaluates (the cheapest chunk
config to embed, the profiles that call no LLM or reranker), which generator it runs offline, how the
evaluation's questions are counted, and the figures it prints from a measured spread."""

from __future__ import annotations

from typing import cast

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.evaluation.question_plan import (
    Pilot,
    PilotScore,
    QuestionPlan,
    QuestionSets,
    check_detect,
    evaluation_questions,
    pilot_generation,
    pilot_setups,
)
from rag_eval_pipeline.core.generation.settings import TokenLevelSettings
from rag_eval_pipeline.core.leaderboard.power import (
    PairedDifferences,
    detectable_difference,
    questions_needed,
)
from rag_eval_pipeline.core.settings.configs import (
    ChunkConfig,
    ChunkConfigName,
    PipelineConfigs,
    RetrievalProfile,
)
from rag_eval_pipeline.core.types import ProfileName
from rag_eval_pipeline_tests.conftest import tiny_corpus

CORPUS = cast(Corpus, tiny_corpus())
FIXED_60 = ChunkConfig(ChunkConfigName("fixed-60"), "fixed", 60)
# overlap makes it embed more characters than fixed-60: (60 / (60 - 30)) = twice the text
OVERLAPPING = ChunkConfig(ChunkConfigName("fixed-60-30"), "fixed", 60, chunk_overlap=30)
DENSE = RetrievalProfile(ProfileName("dense"), top_k=3)
KEYWORD = RetrievalProfile(ProfileName("keyword"), top_k=3, vector_weight=0, keyword_weight=1)
RERANKED = RetrievalProfile(ProfileName("reranked"), top_k=3, reranker="models/cross-encoder")


def configs(*chunk_configs: ChunkConfig, profiles: tuple[RetrievalProfile, ...]) -> PipelineConfigs:
    return PipelineConfigs(chunk_configs, profiles, sources={"profiles": "data/retrieval_profiles.yaml"})


def test_the_pilot_evaluates_the_cheapest_chunk_config_with_the_profiles_that_call_no_model() -> None:
    chosen = pilot_setups(CORPUS, configs(OVERLAPPING, FIXED_60, profiles=(RERANKED, DENSE, KEYWORD)))
    assert [(c.name, [p.name for p in profiles]) for c, profiles in chosen] == [
        ("fixed-60", ["dense", "keyword"])
    ]
    # a config applied to some documents is not the pilot's while a whole-corpus one exists
    scoped = ChunkConfig(ChunkConfigName("fixed-600"), "fixed", 600, documents=("alpha/pumps.md",))
    chosen = pilot_setups(CORPUS, configs(scoped, OVERLAPPING, profiles=(DENSE, KEYWORD)))
    assert chosen[0][0].name == "fixed-60-30"


def test_one_cheap_profile_takes_the_next_cheapest_chunk_config_and_none_is_bad_input() -> None:
    chosen = pilot_setups(CORPUS, configs(OVERLAPPING, FIXED_60, profiles=(DENSE, RERANKED)))
    assert [(c.name, [p.name for p in profiles]) for c, profiles in chosen] == [
        ("fixed-60", ["dense"]),
        ("fixed-60-30", ["dense"]),
    ]
    with pytest.raises(ConfigError, match=r"data/retrieval_profiles.yaml has none"):
        pilot_setups(CORPUS, configs(FIXED_60, profiles=(RERANKED,)))
    with pytest.raises(ConfigError, match="a plan compares two setups"):
        pilot_setups(CORPUS, configs(FIXED_60, profiles=(DENSE,)))


def test_the_pilot_generates_offline_as_many_as_the_settings_ask() -> None:
    configured = TokenLevelSettings(n_questions=120, passage_min_chars=40)
    assert pilot_generation(configured, None) == configured  # the very generation a run makes
    assert pilot_generation(configured, 30).n_questions == 30
    llm = TokenLevelSettings(generator="excerpt-first", n_questions=50)
    assert pilot_generation(llm, None).generator == TokenLevelSettings().generator  # the offline default


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_a_difference_to_detect_outside_0_1_is_bad_input(bad: float) -> None:
    with pytest.raises(ConfigError, match="--detect"):
        check_detect(bad)


def pilot(kept: int = 39, sd: float = 0.2) -> Pilot:
    return Pilot(
        "known-item",
        40,
        kept,
        {"unretrievable": 40 - kept},
        ("fixed-60",),
        (PilotScore("keyword", 0.86), PilotScore("dense", 0.81)),
        "dense",
        PairedDifferences(kept, 0.05, sd),
    )


def test_the_evaluations_questions_are_counted_from_the_golden_file_and_the_generation() -> None:
    golden = QuestionSets(85, "data/datasets/golden_token_level.jsonl", synthetic=False)
    found = evaluation_questions(golden, pilot(), True, TokenLevelSettings(), CORPUS)
    assert (found.count, found.source) == (85, "from data/datasets/golden_token_level.jsonl")
    both = QuestionSets(85, "data/datasets/golden_token_level.jsonl", synthetic=True)
    found = evaluation_questions(both, pilot(), True, TokenLevelSettings(), CORPUS)
    assert found.count == 85 + 39 and "39 made by the paraphrase generator" in found.source
    # another generation than the pilot's: what the configured generator asks for
    llm = TokenLevelSettings(
        generator="excerpt-first", n_questions=50, passage_min_chars=40, passage_max_chars=300
    )
    found = evaluation_questions(QuestionSets(None, "g", True), pilot(), False, llm, CORPUS)
    assert found.count == 50 and "asked for" in found.source
    missing = QuestionSets(None, "g", False, problem="the golden dataset g does not exist")
    assert evaluation_questions(missing, pilot(), True, TokenLevelSettings(), CORPUS).count is None


def test_the_plan_says_the_questions_needed_and_what_the_evaluation_detects() -> None:
    golden = QuestionSets(85, "data/datasets/golden_token_level.jsonl", synthetic=False)
    evaluation = evaluation_questions(golden, pilot(), True, TokenLevelSettings(), CORPUS)
    plan = QuestionPlan(0.03, "span_recall_1000t", 0.05, 16, pilot(), evaluation)
    lines = plan.lines()
    assert lines[0] == (
        "pilot: 39 known-item questions (40 asked for; rejected: 1 unretrievable) on fixed-60 (the cheapest "
        "chunk config to embed), 2 setups"
    )
    alone, all_close = questions_needed(0.03, 0.2), questions_needed(0.03, 0.2, comparisons=15)
    assert alone is not None and all_close is not None and all_close > alone
    assert lines[3] == (
        f"to detect a difference of 0.030 in span_recall_1000t at 80 % power: {alone:,} questions if the next "
        f"setup is the only one that close (two-sided, alpha 0.05), {all_close:,} if all 15 other setups of "
        "the 16 configured are (Holm, alpha 0.05/15)"
    )
    one, shared = detectable_difference(0.2, 85), detectable_difference(0.2, 85, comparisons=15)
    assert one is not None and shared is not None
    assert lines[4] == (
        "the evaluation's 85 questions now (from data/datasets/golden_token_level.jsonl) detect a difference "
        f"of {one:.3f} at 80 % power, {shared:.3f} at alpha 0.05/15"
    )
