"""synthetic_questions and eval_questions run with frames: the synthetic set is computed only when the
evaluation uses it (no embedding otherwise); a golden file asked for and missing is bad input in both
steps, naming the file and the import, and so is a broken one, naming its line."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.tables import corpus_to_frame
from rag_eval_pipeline.defs.ingestion.assets import eval_questions
from rag_eval_pipeline.defs.questions.assets import COMMAND_TAG, REGENERATE_COMMAND, synthetic_questions
from rag_eval_pipeline.lib.resources import EmbedderResource, ProjectResource
from rag_eval_pipeline.lib.step_failures import BAD_INPUT_METADATA
from rag_eval_pipeline_tests.conftest import tiny_corpus, tiny_resources
from rag_eval_pipeline_tests.defs.frames import run_with_frames
from rag_eval_pipeline_tests.fakes import CountingEmbedder, HashingEmbedder

# Every call that reached the embedding model (the cache is per test, under tmp_path).
EMBED_CALLS: list[list[str]] = []
GOLDEN = Path("data/datasets/golden_token_level.jsonl")
SMALL = "token_level: {n_questions: 6, passage_min_chars: 40}\n"


class CountingHashingEmbedderResource(EmbedderResource):
    def model(self) -> Embedder:
        return CountingEmbedder(HashingEmbedder(), calls=EMBED_CALLS)


def resources(project: Path, work: Path) -> dict[str, object]:
    return {
        **tiny_resources(project, work),
        "embedder": CountingHashingEmbedderResource(cache_path=str(work / "embeddings.sqlite")),
    }


def generate(
    project: Path, work: Path, tags: dict[str, str] | None = None
) -> tuple[pd.DataFrame, dict[str, object]]:
    EMBED_CALLS.clear()
    inputs = {"corpus": corpus_to_frame(tiny_corpus())}
    return run_with_frames(synthetic_questions, inputs, resources(project, work), tags=tags)


def evaluate(project: Path, work: Path, synthetic: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, object]]:
    inputs = {"corpus": corpus_to_frame(tiny_corpus()), "synthetic_questions": synthetic}
    return run_with_frames(eval_questions, inputs, resources(project, work))


def settings(project: Path, text: str) -> None:
    (project / "data/generation.yaml").write_text(text, encoding="utf-8")


def test_synthetic_questions_is_skipped_when_the_evaluation_uses_only_the_golden_set(
    tiny_project: Path, tmp_path: Path
) -> None:
    settings(tiny_project, "evaluate_on: golden\n" + SMALL)
    skipped, meta = generate(tiny_project, tmp_path / "a")
    assert EMBED_CALLS == []  # no probe, no dedup: nothing embedded
    assert meta["skipped"] is True and meta["n_questions"] == 0 and meta["model"] == "none"
    assert "the evaluation uses only the golden set" in str(meta["skip_reason"])
    assert str(tiny_project / GOLDEN) in str(meta["skip_reason"])
    # what the evaluation of both sets computes: the same columns, of the same types
    settings(tiny_project, "evaluate_on: both\n" + SMALL)
    generated, generated_meta = generate(tiny_project, tmp_path / "b")
    assert EMBED_CALLS and generated_meta["n_questions"] > 0 and "skipped" not in generated_meta
    assert skipped.empty and list(skipped.columns) == list(generated.columns)
    assert skipped.dtypes.astype(str).to_dict() == generated.dtypes.astype(str).to_dict()
    # an evaluation that needs it does not take the skipped table for an empty set
    with pytest.raises(dg.Failure, match=r"synthetic_questions holds no question: it was skipped"):
        evaluate(tiny_project, tmp_path / "a", skipped)
    # the evaluation on the golden set needs nothing of it
    settings(tiny_project, "evaluate_on: golden\n" + SMALL)
    questions, evaluated = evaluate(tiny_project, tmp_path / "a", skipped)
    assert evaluated["evaluate_on"] == "golden" and evaluated["n_golden"] == len(questions) == 4
    assert evaluated["question_generators"] == "provided"


def test_regenerate_questions_generates_them_even_when_unused(tiny_project: Path, tmp_path: Path) -> None:
    settings(tiny_project, SMALL)  # evaluate_on: golden by default, the golden file is there
    _, meta = generate(tiny_project, tmp_path, tags={COMMAND_TAG: REGENERATE_COMMAND})
    assert EMBED_CALLS and meta["n_questions"] > 0 and "skipped" not in meta


def test_generation_embeds_in_one_model_call_and_its_rerun_in_none(
    tiny_project: Path, tmp_path: Path
) -> None:
    settings(tiny_project, "evaluate_on: both\n" + SMALL)
    generate(tiny_project, tmp_path)
    # the paraphrase generator's words and sentences in one call, its questions (de-duplication) in
    # another (the retrievability probe is off by default); no text twice
    assert len(EMBED_CALLS) == 2 and all(len(call) == len(set(call)) for call in EMBED_CALLS)
    generate(tiny_project, tmp_path)  # the same cache: every text is already embedded
    assert EMBED_CALLS == []


@pytest.mark.parametrize("evaluate_on", ["golden", "both"])
def test_a_golden_file_asked_for_and_missing_fails_both_steps_as_bad_input(
    tiny_project: Path, tmp_path: Path, evaluate_on: str
) -> None:
    """What the ingestion job started from the UI does: no silent switch to other questions."""
    settings(tiny_project, f"evaluate_on: {evaluate_on}\n" + SMALL)
    (tiny_project / GOLDEN).unlink()
    expected = f"asks for the golden dataset {tiny_project / GOLDEN}, which does not exist"
    with pytest.raises(dg.Failure, match=expected) as generating:
        generate(tiny_project, tmp_path)
    assert EMBED_CALLS == []  # refused before anything was generated
    with pytest.raises(dg.Failure, match=expected) as evaluating:
        evaluate(tiny_project, tmp_path, pd.DataFrame())
    for failure in (generating.value, evaluating.value):
        assert failure.metadata[BAD_INPUT_METADATA].value is True
        assert "rag-eval dataset import FILE --out" in str(failure)


def test_a_broken_golden_file_is_bad_input_naming_its_line(tiny_project: Path, tmp_path: Path) -> None:
    golden = tiny_project / GOLDEN
    golden.write_text(golden.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    skipped, _ = generate(tiny_project, tmp_path)  # present, so the golden set is what is evaluated
    with pytest.raises(dg.Failure) as failure:
        evaluate(tiny_project, tmp_path, skipped)
    assert f"{golden}, line 5: not valid JSON" in str(failure.value)
    assert failure.value.metadata[BAD_INPUT_METADATA].value is True


def test_a_golden_file_named_explicitly_that_does_not_exist_is_bad_input(
    tiny_project: Path, tmp_path: Path
) -> None:
    named = {"project": ProjectResource(root=str(tiny_project), golden_dataset="data/datasets/typo.jsonl")}
    inputs = {"corpus": corpus_to_frame(tiny_corpus()), "synthetic_questions": pd.DataFrame()}
    with pytest.raises(
        dg.Failure, match=r"the golden dataset .*typo.jsonl \(named by RAG_EVAL_GOLDEN_DATASET"
    ):
        run_with_frames(eval_questions, inputs, {**resources(tiny_project, tmp_path), **named})
