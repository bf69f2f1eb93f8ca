"""question_sources: which question sets an evaluation uses, for every evaluate_on with and without the
golden file; question_generators and known_item_share: where the evaluated questions came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.generation.settings import GenerationSettings, TokenLevelSettings
from rag_eval_pipeline.core.generation.sources import (
    known_item_share,
    question_generators,
    question_sources,
)


@pytest.mark.parametrize(
    ("evaluate_on", "golden", "synthetic", "name"),
    [
        ("golden", True, False, "golden"),
        ("both", True, True, "both"),
        ("synthetic", False, True, "synthetic"),
    ],
)
def test_the_rule_for_every_evaluate_on_with_the_golden_file(
    tmp_path: Path, evaluate_on: str, golden: bool, synthetic: bool, name: str
) -> None:
    golden_file = tmp_path / "golden.jsonl"
    golden_file.write_text("{}\n", encoding="utf-8")  # broken, but present: the loader says so later
    settings = GenerationSettings(evaluate_on=evaluate_on)  # type: ignore[arg-type]
    sources = question_sources(settings, golden_file)
    assert (sources.golden, sources.synthetic, sources.name) == (golden, synthetic, name)
    assert bool(sources.synthetic_unused()) == (not synthetic)
    if not synthetic:
        assert "evaluate_on: synthetic or both" in sources.synthetic_unused()


@pytest.mark.parametrize("evaluate_on", ["golden", "both"])
def test_a_golden_set_asked_for_and_missing_is_bad_input_naming_the_file_and_the_import(
    tmp_path: Path, evaluate_on: str
) -> None:
    missing = tmp_path / "missing.jsonl"
    generation = tmp_path / "generation.yaml"
    settings = GenerationSettings(
        evaluate_on=evaluate_on,  # type: ignore[arg-type]
        token_level=TokenLevelSettings(generator="excerpt-first"),
        source=str(generation),
    )
    with pytest.raises(DatasetError) as refused:
        question_sources(settings, missing)
    message = str(refused.value)
    assert message.startswith(
        f"evaluate_on: {evaluate_on} (in {generation}) asks for the golden dataset {missing}, which does "
        "not exist"
    )
    assert f"`rag-eval dataset import FILE --out {missing}`" in message
    assert f"set evaluate_on: synthetic in {generation}" in message and "(excerpt-first generator)" in message
    assert "\n" not in message
    # the default (no generation.yaml) asks for it too, and says it is the default
    with pytest.raises(DatasetError, match=r"evaluate_on: golden \(the default, as there is no data/gen"):
        question_sources(GenerationSettings(), missing)
    # synthetic never reads it
    assert question_sources(GenerationSettings(evaluate_on="synthetic"), missing).synthetic


def test_a_golden_file_named_explicitly_must_exist(tmp_path: Path) -> None:
    with pytest.raises(
        DatasetError, match=r"the golden dataset .*typo.jsonl \(named by RAG_EVAL_GOLDEN_DATASET"
    ):
        question_sources(GenerationSettings(), tmp_path / "typo.jsonl", golden_file_named=True)
    # evaluate_on: synthetic never reads it
    settings = GenerationSettings(evaluate_on="synthetic")
    assert question_sources(settings, tmp_path / "typo.jsonl", golden_file_named=True).synthetic


def test_generators_of_a_set_of_questions() -> None:
    known = {"generator": "known-item-simulation"}
    assert question_generators([known, known]) == "known-item-simulation"
    assert question_generators([{}, {"question_id": "g-1"}]) == "provided"
    mixed = question_generators([{"generator": "llm-quoted-excerpts"}, {}, known])
    assert mixed == "known-item-simulation, llm-quoted-excerpts, provided"
    assert known_item_share("known-item-simulation") == "all"
    assert known_item_share(mixed) == "some"
    assert known_item_share("provided") == known_item_share("") == "none"
