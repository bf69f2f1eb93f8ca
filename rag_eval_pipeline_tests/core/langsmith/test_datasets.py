"""upload_dataset / download_dataset through the real langsmith Client against the local server."""

from __future__ import annotations

import dataclasses

import langsmith
import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.langsmith import (
    LangSmithDatasetError,
    LangSmithError,
    download_dataset,
    upload_dataset,
)
from rag_eval_pipeline.core.questions.datasets import ChunkLevelDataset, TokenLevelDataset, TokenLevelExample
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId
from rag_eval_pipeline_tests.langsmith_server import API_KEY, TENANT_ID, LangSmithState


def own_metadata(example: dict) -> dict:
    return {k: v for k, v in example["metadata"].items() if k != "dataset_split"}


def test_upload_creates_one_example_per_question_in_the_to_json_schema(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset
) -> None:
    report = upload_dataset(client, token_dataset, "golden", description="tiny golden set")

    (dataset,) = state.datasets.values()
    assert dataset["name"] == "golden" and dataset["description"] == "tiny golden set"
    assert dataset["extra"]["metadata"]["evaluation_type"] == "token-level"
    assert (report.dataset_id, report.created, report.updated, report.unchanged) == (dataset["id"], 4, 0, 0)
    assert report.url == f"{client.api_url}/o/{TENANT_ID}/datasets/{dataset['id']}"
    remote = {e["metadata"]["question_id"]: e for e in state.dataset_examples("golden")}
    assert sorted(remote) == sorted(e.question_id for e in token_dataset)
    for example in token_dataset:
        stored = remote[example.question_id]
        expected = example.to_json()
        assert stored["inputs"] == expected["inputs"] == {"query": example.query}
        assert stored["outputs"] == expected["outputs"]
        assert stored["outputs"]["relevant_spans"][0].keys() == {"doc_id", "start", "end", "text"}
        # the answer outputs travel with the ground truth
        assert example.reference_answer and stored["outputs"]["reference_answer"] == example.reference_answer
        assert stored["outputs"]["expected_keywords"] == list(example.expected_keywords)
        assert own_metadata(stored) == expected["metadata"]
    assert set(state.auth_headers) == {API_KEY}


def test_uploading_twice_never_duplicates_and_a_changed_question_is_updated_in_place(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset, corpus: Corpus
) -> None:
    upload_dataset(client, token_dataset, "golden")
    first_ids = {e["metadata"]["question_id"]: e["id"] for e in state.dataset_examples("golden")}
    writes_before = len(state.writes())

    again = upload_dataset(client, token_dataset, "golden")
    assert (again.created, again.updated, again.unchanged) == (0, 0, 4)
    assert len(state.writes()) == writes_before  # nothing identical is sent again
    assert len(state.dataset_examples("golden")) == 4

    changed = dataclasses.replace(
        token_dataset.examples[1], query="When exactly does the pressure alarm fire?"
    )
    text = corpus["beta/staff.md"].text
    start = text.index("Day shift lead")
    added = TokenLevelExample(
        QuestionId("tiny-5"),
        "Who leads the day shift?",
        (CharacterSpan(DocumentId("beta/staff.md"), start, start + 14, text[start : start + 14]),),
    )
    edited = TokenLevelDataset(
        (token_dataset.examples[0], changed, *token_dataset.examples[2:], added), name=token_dataset.name
    )
    report = upload_dataset(client, edited, "golden")

    assert (report.created, report.updated, report.unchanged) == (1, 1, 3)
    remote = {e["metadata"]["question_id"]: e for e in state.dataset_examples("golden")}
    assert len(remote) == 5
    assert remote["tiny-2"]["id"] == first_ids["tiny-2"]  # updated in place: experiments stay linked
    assert remote["tiny-2"]["inputs"] == {"query": "When exactly does the pressure alarm fire?"}
    assert remote["tiny-5"]["outputs"]["relevant_spans"][0]["text"] == "Day shift lead"
    assert upload_dataset(client, edited, "golden").unchanged == 5


def test_download_round_trips_token_level_in_upload_order(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset, corpus: Corpus
) -> None:
    upload_dataset(client, token_dataset, "golden")
    back = download_dataset(client, "golden", corpus)

    assert isinstance(back, TokenLevelDataset)
    assert back.name == "golden"
    # the server lists newest first; the download restores the upload order, so the hash survives
    assert [e.question_id for e in back] == [e.question_id for e in token_dataset]
    assert back.examples == token_dataset.examples
    assert back.sha256 == token_dataset.sha256
    assert all("dataset_split" not in e.metadata for e in back)
    # reference answers and expected keywords come back too (example equality covers them as well)
    assert all(e.reference_answer for e in token_dataset)
    assert [(e.reference_answer, e.expected_keywords) for e in back] == [
        (e.reference_answer, e.expected_keywords) for e in token_dataset
    ]
    assert back.answers_sha256 == token_dataset.answers_sha256


def test_download_round_trips_chunk_level_with_its_chunker(
    client: langsmith.Client, state: LangSmithState, chunk_dataset: ChunkLevelDataset, corpus: Corpus
) -> None:
    upload_dataset(client, chunk_dataset, "golden-chunks")
    (dataset,) = state.datasets.values()
    assert dataset["extra"]["metadata"]["evaluation_type"] == "chunk-level"
    assert dataset["extra"]["metadata"]["chunker_fingerprint"] == chunk_dataset.chunker_fingerprint
    stored = state.dataset_examples("golden-chunks")[0]
    assert stored["metadata"]["chunker_fingerprint"] == chunk_dataset.chunker_fingerprint
    assert stored["outputs"].keys() == {"relevant_chunk_ids", "reference_answer", "expected_keywords"}

    back = download_dataset(client, "golden-chunks", corpus)
    assert isinstance(back, ChunkLevelDataset)
    assert back.examples == chunk_dataset.examples
    assert back.chunker_fingerprint == chunk_dataset.chunker_fingerprint
    assert back.sha256 == chunk_dataset.sha256
    assert back.answers_sha256 == chunk_dataset.answers_sha256
    assert [e.reference_answer for e in back] == [e.reference_answer for e in chunk_dataset]


def test_download_checks_spans_against_the_corpus_and_names_dataset_and_example(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset, corpus: Corpus
) -> None:
    upload_dataset(client, token_dataset, "golden")
    # someone edits a span's text in the web app
    example = next(e for e in state.dataset_examples("golden") if e["metadata"]["question_id"] == "tiny-3")
    example["outputs"]["relevant_spans"][0]["text"] = (
        "Zoe Mbeki leads the night shift. Night shift starts at 22:00"
    )

    with pytest.raises(LangSmithDatasetError) as raised:
        download_dataset(client, "golden", corpus)
    message = str(raised.value)
    assert f"LangSmith dataset 'golden', example {example['id']} (question 'tiny-3')" in message
    assert "field outputs.relevant_spans[0].text does not match beta/staff.md" in message
    assert isinstance(raised.value, DatasetError)  # also an input error, like the JSONL reader's

    example["outputs"] = {"relevant_spans": []}
    with pytest.raises(
        LangSmithDatasetError, match=r"question 'tiny-3'\): field outputs.relevant_spans must be a non-empty"
    ):
        download_dataset(client, "golden", corpus)


def test_one_dataset_name_never_mixes_evaluation_types(
    client: langsmith.Client,
    state: LangSmithState,
    token_dataset: TokenLevelDataset,
    chunk_dataset: ChunkLevelDataset,
) -> None:
    upload_dataset(client, token_dataset, "golden")
    with pytest.raises(
        LangSmithError, match=r"dataset 'golden' holds token-level ground truth; this upload is chunk-level"
    ):
        upload_dataset(client, chunk_dataset, "golden")
    assert len(state.dataset_examples("golden")) == 4


def test_downloading_an_unknown_dataset_says_so(client: langsmith.Client, corpus: Corpus) -> None:
    with pytest.raises(
        LangSmithError, match=r"no dataset named 'nope' at http://127.0.0.1:\d+: check the name"
    ):
        download_dataset(client, "nope", corpus)


def test_an_added_answer_is_an_update_in_place_and_a_bad_one_fails_the_download(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset, corpus: Corpus
) -> None:
    without = TokenLevelDataset(
        tuple(dataclasses.replace(e, reference_answer=None, expected_keywords=()) for e in token_dataset),
        name=token_dataset.name,
    )
    upload_dataset(client, without, "golden")
    assert all(e["outputs"].keys() == {"relevant_spans"} for e in state.dataset_examples("golden"))
    ids = {e["metadata"]["question_id"]: e["id"] for e in state.dataset_examples("golden")}

    report = upload_dataset(client, token_dataset, "golden")
    assert (report.created, report.updated) == (0, 4)  # the answers changed the outputs, not the questions
    remote = {e["metadata"]["question_id"]: e for e in state.dataset_examples("golden")}
    assert {q: e["id"] for q, e in remote.items()} == ids
    assert (
        without.sha256 == token_dataset.sha256 != ""
        and without.answers_sha256 != token_dataset.answers_sha256
    )

    remote["tiny-2"]["outputs"]["expected_keywords"] = ["7.5 bar", ""]
    with pytest.raises(
        LangSmithDatasetError,
        match=r"question 'tiny-2'\): field outputs.expected_keywords\[1\] must be a non-empty",
    ):
        download_dataset(client, "golden", corpus)
