from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.generation.settings import GenerationSettings
from rag_eval_pipeline.core.llm.accounting import Price
from rag_eval_pipeline.core.settings.settings_file import load_settings

REPO = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "generation.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_missing_file_gives_the_offline_defaults(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "absent.yaml", GenerationSettings)
    assert settings == GenerationSettings()
    assert settings.evaluate_on == "golden" and settings.token_level.generator == "paraphrase"
    # no filter that keeps only what one retriever finds: it would favour it over the setups compared
    assert settings.token_level.retrievability_top_n == 0 and settings.chunk_level.retrievability_top_n == 0


def test_the_bundled_file_loads() -> None:
    settings = load_settings(REPO / "data" / "generation.yaml", GenerationSettings)
    assert settings.source.endswith("generation.yaml")
    # the number of questions follows the corpus unless a number is written
    assert settings.token_level.n_questions == "auto" == GenerationSettings().token_level.n_questions
    assert settings.token_level.question_target() == GenerationSettings().token_level.question_target()


def test_sections_and_prices_are_read(tmp_path: Path) -> None:
    settings = load_settings(
        write(
            tmp_path,
            "evaluate_on: both\n"
            "token_level: {generator: excerpt-first, n_questions: 5}\n"
            "llm: {model: llama3, budget_usd: null, prices: {llama3: {input: 0, output: 0}}}\n",
        ),
        GenerationSettings,
    )
    assert settings.evaluate_on == "both" and settings.token_level.n_questions == 5
    assert settings.llm.budget_usd is None and settings.llm.prices == {"llama3": Price(0.0, 0.0)}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("evaluate_on: all\n", "evaluate_on must be one of golden, synthetic, both; got 'all'"),
        ("token_level: {generatr: llm}\n", "unknown key(s) token_level.generatr"),
        ("token_level: {dedup_threshold: 1.5}\n", "token_level.dedup_threshold must be a number in (0, 1]"),
        ("llm: {max_concurrency: 0}\n", "llm.max_concurrency must be an integer >= 1"),
        ("llm: {prices: {m: {input: 1}}}\n", "llm.prices.m must be {input:"),
        ("lm: {}\n", "unknown key(s) lm"),
        (
            "token_level: {n_questions: many}\n",
            "token_level.n_questions must be an integer or one of auto, got",
        ),
        ("token_level: {n_questions: 0}\n", "token_level.n_questions must be auto or an integer >= 1, got 0"),
        (
            "token_level: {min_questions: 200, max_questions: 100}\n",
            "token_level.max_questions must be an integer >= 200, got 100",
        ),
    ],
)
def test_bad_settings_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, GenerationSettings)
    assert str(path) in str(caught.value) and message in str(caught.value)
