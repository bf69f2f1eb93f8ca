"""The cross-encoder reranker on a real (MiniLM body, seeded head) cross-encoder, offline."""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.retrieval.rerank import (
    CrossEncoderReranker,
    Reranker,
    RerankerError,
    load_reranker,
)
from rag_eval_pipeline_tests.cross_encoder import build_minilm_cross_encoder, minilm_body_path

QUERY = "When does the pressure alarm fire?"
# varied lengths, so batches of different sizes pad differently
PASSAGES = [
    f"Passage {i}. "
    + (
        "A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds. "
        if i % 3 == 0
        else "Every relief valve is tested in March; the test takes two technicians. "
    )
    * (1 + i % 5)
    for i in range(20)
]


@pytest.fixture(scope="module")
def cross_encoder_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield build_minilm_cross_encoder(tmp_path_factory.mktemp("rerank") / "minilm-ce")


def _independent_predictions(path: Path, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(path), device="cpu", local_files_only=True)
    return np.asarray(model.predict(list(pairs), show_progress_bar=False))


def _order(scores: Sequence[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


@pytest.mark.slow
def test_scores_are_the_models_predictions_for_query_passage_pairs(cross_encoder_path: Path) -> None:
    reranker = CrossEncoderReranker(cross_encoder_path)
    assert isinstance(reranker, Reranker)

    scores = reranker.score(QUERY, PASSAGES)

    expected = _independent_predictions(cross_encoder_path, [(QUERY, p) for p in PASSAGES])
    swapped = _independent_predictions(cross_encoder_path, [(p, QUERY) for p in PASSAGES])
    assert all(type(score) is float for score in scores)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)
    # the check above can tell the pair order apart, and the passages apart
    assert np.abs(swapped - expected).max() > 1e-4
    assert len(set(scores)) == len(PASSAGES)
    assert _order(scores) == _order(expected.tolist())


@pytest.mark.slow
def test_scores_are_deterministic_and_do_not_depend_on_batch_size(cross_encoder_path: Path) -> None:
    by_32 = CrossEncoderReranker(cross_encoder_path, batch_size=32)
    by_1 = CrossEncoderReranker(cross_encoder_path, batch_size=1)

    first = by_32.score(QUERY, PASSAGES)

    assert by_32.score(QUERY, PASSAGES) == first
    np.testing.assert_allclose(by_1.score(QUERY, PASSAGES), first, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_no_passages_give_no_scores_without_running_the_model(
    cross_encoder_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reranker = CrossEncoderReranker(cross_encoder_path)

    def must_not_run(*args: object, **kwargs: object) -> object:
        raise AssertionError("the model ran for an empty passage list")

    monkeypatch.setattr(reranker._model, "predict", must_not_run)
    assert reranker.score(QUERY, []) == []


@pytest.mark.slow
def test_loading_and_scoring_make_no_network_calls(
    cross_encoder_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    attempts: list[object] = []

    def blocked(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("network access in a test")

    monkeypatch.setattr(socket.socket, "connect", blocked)

    assert len(CrossEncoderReranker(cross_encoder_path).score(QUERY, PASSAGES[:3])) == 3
    assert attempts == []


@pytest.mark.slow
def test_model_id_names_the_folder_and_changes_with_its_config(
    cross_encoder_path: Path, tmp_path: Path
) -> None:
    edited = tmp_path / "minilm-ce"
    shutil.copytree(cross_encoder_path, edited)
    config = json.loads((edited / "config.json").read_text(encoding="utf-8"))
    (edited / "config.json").write_text(json.dumps({**config, "note": "edited"}), encoding="utf-8")

    original_id = CrossEncoderReranker(cross_encoder_path).model_id

    assert original_id.startswith("cross-encoder:minilm-ce:")
    assert CrossEncoderReranker(cross_encoder_path).model_id == original_id
    assert CrossEncoderReranker(edited).model_id.startswith("cross-encoder:minilm-ce:")
    assert CrossEncoderReranker(edited).model_id != original_id


def test_a_missing_path_is_a_config_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-reranker"

    with pytest.raises(RerankerError, match=f"{missing}.*does not exist.*reranker: none") as raised:
        CrossEncoderReranker(missing)
    assert isinstance(raised.value, ConfigError)


def test_a_folder_with_an_unreadable_config_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{ this is not json", encoding="utf-8")

    with pytest.raises(RerankerError, match=str(tmp_path)):
        CrossEncoderReranker(tmp_path)


@pytest.mark.slow
def test_a_folder_with_garbage_weights_is_rejected(cross_encoder_path: Path, tmp_path: Path) -> None:
    shutil.copy(cross_encoder_path / "config.json", tmp_path / "config.json")
    (tmp_path / "model.safetensors").write_bytes(os.urandom(4096))

    with pytest.raises(RerankerError, match=f"{tmp_path} is not a loadable cross-encoder"):
        CrossEncoderReranker(tmp_path)


def test_an_embedding_model_is_rejected_rather_than_given_a_random_head() -> None:
    with pytest.raises(RerankerError, match="embedding model, not a cross-encoder"):
        CrossEncoderReranker(minilm_body_path())


@pytest.mark.slow
def test_load_reranker_keeps_one_instance_per_folder(
    cross_encoder_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(cross_encoder_path.parent)
    other = tmp_path / "other-ce"
    shutil.copytree(cross_encoder_path, other)

    first = load_reranker(cross_encoder_path)

    assert load_reranker(str(cross_encoder_path)) is first
    assert load_reranker(Path(cross_encoder_path.name)) is first
    assert load_reranker(f"../{cross_encoder_path.parent.name}/{cross_encoder_path.name}") is first
    assert load_reranker(other) is not first
