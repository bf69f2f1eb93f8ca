import dataclasses
import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker, chunk_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.questions.datasets import (
    TokenLevelDataset,
    TokenLevelExample,
    read_chunk_level_jsonl,
    read_token_level_examples,
    read_token_level_jsonl,
    write_jsonl,
)
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId

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


def test_spans_in_a_changed_document_are_kept_as_written_for_reanchoring(tmp_path: Path, corpus: Corpus):
    # a.md grew shorter and changed: the span now lies past its end and the text differs
    path = write_lines(
        tmp_path / "old.jsonl",
        [example(0, 8, text="The bump"), example(40, 70, text="x" * 30, question_id="q2")],
    )
    with pytest.raises(DatasetError, match="does not match a.md"):
        read_token_level_examples(path, corpus)  # not known to have changed: a wrong dataset
    first, second = read_token_level_examples(path, corpus, changed={"a.md"})
    assert first.relevant_spans == (CharacterSpan(DocumentId("a.md"), 0, 8, "The bump"),)
    assert (second.relevant_spans[0].start, second.relevant_spans[0].end) == (40, 70)
    # a removed document too, but never a span no edit explains
    assert (
        read_token_level_examples(
            write_lines(tmp_path / "gone.jsonl", [example(0, 8, doc_id="gone.md")]),
            corpus,
            changed={"gone.md"},
        )[0]
        .relevant_spans[0]
        .doc_id
        == "gone.md"
    )
    with pytest.raises(DatasetError, match=r"line 1: .*\[5:5\] is empty"):
        read_token_level_examples(
            write_lines(tmp_path / "e.jsonl", [example(5, 5)]), corpus, changed={"a.md"}
        )


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


def answered(
    start: int, end: int, answer: object = "It runs at 1,450 rpm.", keywords: object = ("1,450",), **extra
):
    obj = example(start, end, **extra)
    if answer is not None:
        obj["outputs"]["reference_answer"] = answer
    if keywords is not None:
        obj["outputs"]["expected_keywords"] = list(keywords) if isinstance(keywords, tuple) else keywords
    return obj


def two_questions(**answers: tuple[str | None, tuple[str, ...]]) -> TokenLevelDataset:
    """q1 and q2 over DOC, with the reference answer and keywords given per question id."""
    examples = []
    for qid, query, (start, end) in [
        ("q1", "How fast?", (0, 26)),
        ("q2", "When does the alarm fire?", (28, 55)),
    ]:
        answer, keywords = answers.get(qid, (None, ()))
        span = CharacterSpan(DocumentId("a.md"), start, end, DOC[start:end])
        examples.append(
            TokenLevelExample(
                QuestionId(qid),
                query,
                (span,),
                {"source": "test"},
                reference_answer=answer,
                expected_keywords=keywords,
            )
        )
    return TokenLevelDataset(tuple(examples), name="two")


def test_reference_answers_and_keywords_round_trip_through_jsonl(tmp_path: Path, corpus: Corpus):
    source = write_lines(
        tmp_path / "d.jsonl",
        [
            answered(0, 26, keywords=("1,450", "rpm"), question_id="q1"),
            answered(28, 55, answer=None, keywords=None, question_id="q2"),
            answered(4, 8, answer=None, keywords=("pump",), question_id="q3"),
        ],
    )
    dataset = read_token_level_jsonl(source, corpus)
    assert [(e.reference_answer, e.expected_keywords) for e in dataset] == [
        ("It runs at 1,450 rpm.", ("1,450", "rpm")),
        (None, ()),
        (None, ("pump",)),
    ]
    write_jsonl(dataset, tmp_path / "out.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines[0]["outputs"]["reference_answer"] == "It runs at 1,450 rpm."
    assert lines[0]["outputs"]["expected_keywords"] == ["1,450", "rpm"]
    assert lines[1]["outputs"].keys() == {"relevant_spans"}  # unset fields are not written
    assert lines[2]["outputs"].keys() == {"relevant_spans", "expected_keywords"}
    again = read_token_level_jsonl(tmp_path / "out.jsonl", corpus)
    assert again.examples == dataset.examples
    assert again.answers_sha256 == dataset.answers_sha256


def test_null_answer_fields_read_as_absent(tmp_path: Path, corpus: Corpus):
    obj = example(0, 26)
    obj["outputs"].update(reference_answer=None, expected_keywords=None)
    (loaded,) = read_token_level_jsonl(write_lines(tmp_path / "n.jsonl", [obj]), corpus)
    assert (loaded.reference_answer, loaded.expected_keywords) == (None, ())


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            answered(0, 26, answer="  "),
            r"field outputs.reference_answer must be a non-empty string, got a blank string",
        ),
        (
            answered(0, 26, answer=42),
            r"field outputs.reference_answer must be a non-empty string, got a number",
        ),
        (
            answered(0, 26, keywords=[]),
            r"field outputs.expected_keywords must be a non-empty list of strings, got an empty list",
        ),
        (
            answered(0, 26, keywords="rpm"),
            r"field outputs.expected_keywords must be a non-empty list of strings, got 'rpm'",
        ),
        (
            answered(0, 26, keywords=["rpm", ""]),
            r"field outputs.expected_keywords\[1\] must be a non-empty string, got a blank",
        ),
        (
            answered(0, 26, keywords=["rpm", 7]),
            r"field outputs.expected_keywords\[1\] must be a non-empty string, got a number",
        ),
    ],
)
def test_invalid_answer_fields_name_file_line_and_field(
    tmp_path: Path, corpus: Corpus, obj: dict, message: str
):
    path = write_lines(tmp_path / "bad.jsonl", [answered(0, 8, question_id="q1"), obj])
    with pytest.raises(DatasetError, match=rf"line 2: {message}") as err:
        read_token_level_jsonl(path, corpus)
    assert str(path) in str(err.value)


def test_an_example_refuses_answer_fields_the_reader_would_refuse():
    span = CharacterSpan(DocumentId("a.md"), 0, 8, "The pump")
    with pytest.raises(DatasetError, match="question 'q1': reference_answer must be a non-empty string"):
        TokenLevelExample(QuestionId("q1"), "How fast?", (span,), reference_answer="")
    with pytest.raises(DatasetError, match="question 'q1': expected_keywords must be a tuple of non-empty"):
        TokenLevelExample(QuestionId("q1"), "How fast?", (span,), expected_keywords=("rpm", " "))


def test_the_dataset_hash_ignores_answers_and_the_answers_hash_tracks_them():
    plain = two_questions()
    with_answers = two_questions(q1=("It runs at 1,450 rpm.", ("1,450",)), q2=("At 7.5 bar.", ()))
    # the hash the datasets had before reference answers existed: retrieval history stays comparable
    assert plain.sha256 == with_answers.sha256 == "cc5100cf58ec2db7"
    assert plain.answers_sha256 != with_answers.answers_sha256
    edited = two_questions(q1=("It runs at 1,450 rpm.", ("1,450",)), q2=("At 7.5 bar for ten seconds.", ()))
    more_keywords = two_questions(q1=("It runs at 1,450 rpm.", ("1,450", "rpm")), q2=("At 7.5 bar.", ()))
    hashes = {d.answers_sha256 for d in (plain, with_answers, edited, more_keywords)}
    assert len(hashes) == 4
    # metadata changes neither hash; changing the ground truth changes only the dataset hash
    relabelled = TokenLevelDataset(
        tuple(dataclasses.replace(e, metadata={"source": "other"}) for e in with_answers), name="two"
    )
    assert (relabelled.sha256, relabelled.answers_sha256) == (
        with_answers.sha256,
        with_answers.answers_sha256,
    )
    moved = dataclasses.replace(
        with_answers.examples[0], relevant_spans=(CharacterSpan(DocumentId("a.md"), 0, 8, "The pump"),)
    )
    shifted = TokenLevelDataset((moved, with_answers.examples[1]), name="two")
    assert shifted.sha256 != with_answers.sha256 and shifted.answers_sha256 == with_answers.answers_sha256


def test_answers_carry_over_to_chunk_level_and_its_jsonl(tmp_path: Path, corpus: Corpus):
    dataset = read_token_level_jsonl(
        write_lines(tmp_path / "d.jsonl", [answered(4, 30, keywords=("1,450", "rpm"))]), corpus
    )
    chunker = FixedSizeChunker(10, 0)
    chunk_level = dataset.to_chunk_level(chunk_corpus(chunker, corpus), chunker.fingerprint)
    (converted,) = chunk_level.examples
    assert (converted.reference_answer, converted.expected_keywords) == (
        "It runs at 1,450 rpm.",
        ("1,450", "rpm"),
    )
    assert chunk_level.answers_sha256 == dataset.answers_sha256
    write_jsonl(chunk_level, tmp_path / "chunk.jsonl")
    loaded = read_chunk_level_jsonl(tmp_path / "chunk.jsonl")
    assert loaded.examples == chunk_level.examples and loaded.sha256 == chunk_level.sha256
    assert loaded.examples[0].reference_answer == "It runs at 1,450 rpm."


def test_chunk_level_answer_fields_are_validated(tmp_path: Path):
    obj = {
        "inputs": {"query": "q"},
        "outputs": {"relevant_chunk_ids": ["c1"], "reference_answer": ""},
        "metadata": {"chunker_fingerprint": "fixed:x"},
    }
    with pytest.raises(
        DatasetError, match=r"c.jsonl, line 1: field outputs.reference_answer must be a non-empty"
    ):
        read_chunk_level_jsonl(write_lines(tmp_path / "c.jsonl", [obj]))
