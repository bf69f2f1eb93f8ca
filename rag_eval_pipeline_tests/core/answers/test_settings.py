"""data/answer_evaluation.yaml: defaults, the bundled file, and errors that name the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.answers.settings import AnswerSettings
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.settings.settings_file import load_settings

REPO = Path(__file__).resolve().parents[3]


def test_a_missing_file_gives_the_defaults_and_the_bundled_file_states_them(tmp_path: Path):
    defaults = load_settings(tmp_path / "absent.yaml", AnswerSettings)
    assert defaults == AnswerSettings()
    assert (defaults.semantic.threshold, defaults.judge.top_n, defaults.hybrid.margin) == (0.75, 5, 0.10)
    assert defaults.production.recall_threshold == 0.7 and defaults.answerer == "auto"
    assert load_settings(REPO / "data/answer_evaluation.yaml", AnswerSettings) == defaults


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("judge: {top_m: 3}\n", "unknown key(s) judge.top_m"),
        ("answerr: llm\n", "unknown key(s) answerr"),
        ("answerer: gpt\n", "answerer must be one of auto, llm, extractive"),
        ("semantic: {threshold: 1.5}\n", "semantic.threshold must be a number in [0, 1]"),
        ("semantic: {objective: recall}\n", "semantic.objective must be one of accuracy, f1"),
        ("judge: {top_n: -1}\n", "judge.top_n must be an integer >= 0"),
        ("judge: 3\n", "judge must be a mapping"),
        ("hybrid: {margin: x}\n", "hybrid.margin must be a number"),
        ("- a\n", "expected a mapping at the top level"),
    ],
)
def test_bad_settings_name_the_file_and_the_key(tmp_path: Path, text: str, message: str):
    path = tmp_path / "answer_evaluation.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_settings(path, AnswerSettings)
    assert str(path) in str(error.value) and message in str(error.value)


def test_partial_sections_keep_the_other_defaults(tmp_path: Path):
    path = tmp_path / "answer_evaluation.yaml"
    path.write_text("judge:\n  top_n: 1\nllm_judging: on\n", encoding="utf-8")
    settings = load_settings(path, AnswerSettings)
    assert settings.judge.top_n == 1 and settings.judge.rank_by == "semantic_similarity"
    assert settings.llm_judging == "on" and settings.source == str(path)


def test_bare_on_and_off_mean_what_they_say(tmp_path: Path):
    path = tmp_path / "answer_evaluation.yaml"
    for text, expected in (
        ("llm_judging: off\n", "off"),
        ("llm_judging: 'on'\n", "on"),
        ("llm_judging: yes\n", "on"),
    ):
        path.write_text(text, encoding="utf-8")
        assert load_settings(path, AnswerSettings).llm_judging == expected
