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
    ("evaluate_on", "present", "golden", "synthetic", "name"),
    [
        ("golden", True, True, False, "golden"),
        ("golden", False, False, True, "synthetic"),
        ("both", True, True, True, "both"),
        ("both", False, False, True, "synthetic"),
        ("synthetic", True, False, True, "synthetic"),
        ("synthetic", False, False, True, "synthetic"),
    ],
)
def test_the_rule_for_every_evaluate_on_with_and_without_the_golden_file(
    tmp_path: Path, evaluate_on: str, present: bool, golden: bool, synthetic: bool, name: str
) -> None:
    golden_file = tmp_path / "golden.jsonl"
    if present:
        golden_file.write_text("{}\n", encoding="utf-8")  # broken, but present: the loader says so later
    settings = GenerationSettings(evaluate_on=evaluate_on)  # type: ignore[arg-type]
    sources = question_sources(settings, golden_file)
    assert (sources.golden, sources.synthetic, sources.name) == (golden, synthetic, name)
    fell_back = evaluate_on != "synthetic" and not present
    assert bool(sources.note) == fell_back
    assert bool(sources.synthetic_unused()) == (not synthetic)
    if fell_back:
        assert str(golden_file) in sources.note and "rag-eval dataset import FILE --out" in sources.note
        assert "\n" not in sources.note  # one line in the step log and the terminal
    if not synthetic:
        assert "evaluate_on: synthetic or both" in sources.synthetic_unused()


def test_the_note_names_the_generator_and_what_evaluate_on_both_loses(tmp_path: Path) -> None:
    settings = GenerationSettings(
        evaluate_on="both", token_level=TokenLevelSettings(generator="excerpt-first")
    )
    note = question_sources(settings, tmp_path / "missing.jsonl").note
    assert note.startswith(f"no golden dataset at {tmp_path / 'missing.jsonl'}: evaluating on synthetic")
    assert "(excerpt-first generator" in note and "only (evaluate_on: both)" in note


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
