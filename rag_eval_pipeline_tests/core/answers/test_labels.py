"""The human labels file: what it accepts, and errors that name the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.answers.labels import HumanLabel, LabelsError, load_labels
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.types import QuestionId


def test_loads_labels_in_file_order(tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '{"question_id": "q1", "answer": "Paris", "correct": 1}\n'
        "\n"
        '{"question_id": "q1", "answer": "Lyon", "correct": 0, "note": "wrong city"}\n'
        '{"question_id": "q2", "answer": "", "correct": false}\n',
        encoding="utf-8",
    )
    assert load_labels(path) == (
        HumanLabel(QuestionId("q1"), "Paris", True, "", 1),
        HumanLabel(QuestionId("q1"), "Lyon", False, "wrong city", 3),
        HumanLabel(QuestionId("q2"), "", False, "", 4),
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question_id": "q1", "answer": "x", "correct": 1', "line 2: not valid JSON"),
        ('["q1", "x", 1]', "line 2: expected a JSON object"),
        ('{"answer": "x", "correct": 1}', "line 2: field 'question_id' must be a non-empty string"),
        ('{"question_id": " ", "answer": "x", "correct": 1}', "field 'question_id' must be a non-empty"),
        ('{"question_id": "q1", "answer": 3, "correct": 1}', "line 2: field 'answer' must be a string"),
        ('{"question_id": "q1", "answer": "x"}', "line 2: field 'correct' is missing"),
        ('{"question_id": "q1", "answer": "x", "correct": 2}', "field 'correct' must be 1 .* got 2"),
        ('{"question_id": "q1", "answer": "x", "correct": 1.0}', "field 'correct' must be 1 .* got 1.0"),
        ('{"question_id": "q1", "answer": "x", "correct": "1"}', "field 'correct' must be 1 .* got '1'"),
        ('{"question_id": "q1", "answer": "x", "correct": 1, "note": 5}', "field 'note' must be a string"),
        ('{"question_id": "q1", "answer": "x", "corect": 1}', "unknown field\\(s\\) corect"),
        (
            '{"question_id": "q0", "answer": "a", "correct": 0}',
            "line 2: a second label .*\\(first on line 1\\)",
        ),
    ],
)
def test_errors_name_the_file_line_and_field(tmp_path: Path, line: str, message: str):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"question_id": "q0", "answer": "a", "correct": 1}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(LabelsError, match=message) as info:
        load_labels(path)
    assert str(info.value).startswith(f"{path}, line 2: ")
    assert isinstance(info.value, InputError)


def test_a_missing_file_is_file_not_found(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        load_labels(tmp_path / "absent.jsonl")
