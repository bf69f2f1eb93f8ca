import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker, chunk_corpus
from rag_eval_pipeline.core.corpus import Corpus
from rag_eval_pipeline.core.datasets import (
    read_chunk_level_jsonl,
    read_token_level_jsonl,
    write_jsonl,
)
from rag_eval_pipeline.core.errors import DatasetError

DOC = "The pump runs at 1,450 rpm. The alarm fires at 7.5 bar."


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.md").write_text(DOC, encoding="utf-8")
    return Corpus.from_folder(folder)


def example(start: int, end: int, text: str | None = None, doc_id: str = "a.md", **extra: object) -> dict:
    span = {"doc_id": doc_id, "start": start, "end": end, "text": DOC[start:end] if text is None else text}
    return {"inputs": {"query": "How fast?"}, "outputs": {"relevant_spans": [span]}, "metadata": extra}


def write_lines(path: Path, objects: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
    return path


def test_round_trip_keeps_spans_and_metadata(tmp_path: Path, corpus: Corpus):
    source = write_lines(tmp_path / "d.jsonl", [example(0, 26, question_id="q1", question_type="factual")])
    dataset = read_token_level_jsonl(source, corpus)
    assert dataset.examples[0].relevant_spans[0].text == "The pump runs at 1,450 rpm"
    write_jsonl(dataset, tmp_path / "out.jsonl")
    again = read_token_level_jsonl(tmp_path / "out.jsonl", corpus)
    assert again.examples == dataset.examples
    assert again.examples[0].metadata["question_type"] == "factual"
    assert again.sha256 == dataset.sha256


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (example(0, 400), r"line 2: field outputs.relevant_spans\[0\]: span \[0:400\] lies outside a.md"),
        (
            example(0, 8, text="The bump"),
            r"line 2: field outputs.relevant_spans\[0\].text does not match a.md\[0:8\]",
        ),
        (
            example(0, 8, doc_id="b.md"),
            r"line 2: field outputs.relevant_spans\[0\].doc_id 'b.md' is not a document",
        ),
        (
            {"inputs": {"query": "q"}, "outputs": {"relevant_spans": []}},
            "line 2: field outputs.relevant_spans must be a non-empty list",
        ),
        ({"inputs": {}, "outputs": {}}, "line 2: field inputs.query must be a non-empty string"),
        (example(0, 8, question_id="q1"), "line 2: field metadata.question_id 'q1' already used on line 1"),
    ],
)
def test_invalid_examples_name_file_line_and_field(tmp_path: Path, corpus: Corpus, obj: dict, message: str):
    path = write_lines(tmp_path / "bad.jsonl", [example(0, 8, question_id="q1"), obj])
    with pytest.raises(DatasetError, match=message) as err:
        read_token_level_jsonl(path, corpus)
    assert str(path) in str(err.value)


def test_moved_text_gets_a_hint(tmp_path: Path, corpus: Corpus):
    path = write_lines(tmp_path / "moved.jsonl", [example(1, 9, text="The pump")])
    with pytest.raises(DatasetError, match=r"occurs at \[0:8\]"):
        read_token_level_jsonl(path, corpus)


def test_broken_json_line(tmp_path: Path, corpus: Corpus):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"inputs": \n', encoding="utf-8")
    with pytest.raises(DatasetError, match="line 1: not valid JSON"):
        read_token_level_jsonl(path, corpus)


def test_token_level_converts_to_chunk_level_for_any_chunker(tmp_path: Path, corpus: Corpus):
    dataset = read_token_level_jsonl(write_lines(tmp_path / "d.jsonl", [example(4, 30)]), corpus)
    chunker = FixedSizeChunker(10, 0)
    chunks = chunk_corpus(chunker, corpus)
    chunk_level = dataset.to_chunk_level(chunks, chunker.fingerprint)
    # characters 4..30 touch chunks [0:10), [10:20), [20:30) but not [30:40)
    assert chunk_level.examples[0].relevant_chunk_ids == tuple(c.chunk_id for c in chunks[:3])
    write_jsonl(chunk_level, tmp_path / "chunk.jsonl")
    loaded = read_chunk_level_jsonl(tmp_path / "chunk.jsonl")
    assert loaded.chunker_fingerprint == chunker.fingerprint
    assert loaded.examples == chunk_level.examples


def test_chunk_level_file_must_name_its_chunker(tmp_path: Path):
    path = write_lines(
        tmp_path / "c.jsonl", [{"inputs": {"query": "q"}, "outputs": {"relevant_chunk_ids": ["c1"]}}]
    )
    with pytest.raises(DatasetError, match="chunker_fingerprint"):
        read_chunk_level_jsonl(path)
    assert read_chunk_level_jsonl(path, chunker_fingerprint="fixed:x").chunker_fingerprint == "fixed:x"
