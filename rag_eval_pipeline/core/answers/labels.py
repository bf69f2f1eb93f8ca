"""Human labels: answers a person marked correct or not, the ground truth for thresholds and agreement.

One JSON object a line: ``{"question_id": "q-1", "answer": "...", "correct": 0 | 1, "note": "..."}``
(``note`` optional). Blank lines are allowed. Any other field, a ``correct`` that is not 0/1
(``true``/``false`` are accepted as the same), or a second label for the same (question, answer) pair
is an error naming the file, line and field: a typo must not silently change a fitted threshold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ..types import QuestionId

LABEL_FIELDS = ("question_id", "answer", "correct", "note")


class LabelsError(DatasetError):
    pass


@dataclass(frozen=True)
class HumanLabel:
    question_id: QuestionId
    answer: str
    correct: bool
    note: str = ""
    line: int = 0  # where it came from, for messages; 0 when built in code


def parse_label(obj: Any, where: str, line: int = 0) -> HumanLabel:
    """One label from a decoded JSON line; ``where`` (``<file>, line <n>``) starts every error message."""
    if not isinstance(obj, dict):
        raise LabelsError(f"{where}: expected a JSON object with {', '.join(LABEL_FIELDS[:3])}")
    unknown = sorted(set(obj) - set(LABEL_FIELDS))
    if unknown:
        raise LabelsError(
            f"{where}: unknown field(s) {', '.join(unknown)}; a label holds only "
            f"{', '.join(LABEL_FIELDS)} (put remarks in 'note')"
        )
    question_id = obj.get("question_id")
    if not isinstance(question_id, str) or not question_id.strip():
        raise LabelsError(f"{where}: field 'question_id' must be a non-empty string, got {question_id!r}")
    answer = obj.get("answer")
    if not isinstance(answer, str):
        raise LabelsError(f"{where}: field 'answer' must be a string (the labelled answer), got {answer!r}")
    if "correct" not in obj:
        raise LabelsError(f"{where}: field 'correct' is missing; give 1 (correct) or 0 (not correct)")
    correct = obj["correct"]
    if isinstance(correct, float) or correct not in (0, 1):
        raise LabelsError(f"{where}: field 'correct' must be 1 (correct) or 0 (not correct), got {correct!r}")
    note = obj.get("note", "")
    if not isinstance(note, str):
        raise LabelsError(f"{where}: field 'note' must be a string, got {note!r}")
    return HumanLabel(QuestionId(question_id), answer, bool(correct), note, line)


def load_labels(path: str | Path) -> tuple[HumanLabel, ...]:
    """Every label in ``path``, in file order. ``FileNotFoundError`` when there is no such file."""
    path = Path(path)
    labels: list[HumanLabel] = []
    seen: dict[tuple[str, str], int] = {}
    with path.open(encoding="utf-8") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            where = f"{path}, line {number}"
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise LabelsError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            label = parse_label(obj, where, number)
            key = (label.question_id, label.answer)
            if key in seen:
                raise LabelsError(
                    f"{where}: a second label for question {label.question_id!r} with the same answer "
                    f"(first on line {seen[key]}); keep one"
                )
            seen[key] = number
            labels.append(label)
    return tuple(labels)
