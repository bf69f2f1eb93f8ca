"""The API's worker process records how its evaluation ended: a cancel that interrupts it anywhere
(cancel_pending sends SIGINT, which may land before `evaluate` is inside its own handler) is a cancel,
never a failure; an error is a failure with its reason."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from rag_eval_pipeline.api import worker
from rag_eval_pipeline.api.evaluations import EvaluationRecord, EvaluationRecords
from rag_eval_pipeline.runner import evaluate as evaluate_module
from rag_eval_pipeline.runner import regenerate

ENDINGS = [
    ("evaluation", evaluate_module, "evaluate", KeyboardInterrupt(), 130, "cancelled", ""),
    (
        "evaluation",
        evaluate_module,
        "evaluate",
        evaluate_module.EvaluationInterrupted("e"),
        130,
        "cancelled",
        "",
    ),
    ("regeneration", regenerate, "regenerate_questions", KeyboardInterrupt(), 130, "cancelled", ""),
    (
        "evaluation",
        evaluate_module,
        "evaluate",
        RuntimeError("disk gone"),
        1,
        "failed",
        "RuntimeError: disk gone",
    ),
]


@pytest.mark.parametrize(("kind", "module", "name", "raised", "code", "outcome", "error"), ENDINGS)
def test_how_the_worker_ended_is_recorded(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    module: ModuleType,
    name: str,
    raised: BaseException,
    code: int,
    outcome: str,
    error: str,
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(module, name, interrupted)
    records = EvaluationRecords(tmp_path)
    records.write(EvaluationRecord("eval-1", "ops-admin", "2026-12-04T00:00:00+00:00", kind=kind))  # type: ignore[arg-type]
    assert worker.run_worker(tmp_path, "eval-1") == code
    record = records.read("eval-1")
    assert record is not None and record.ended
    assert (record.outcome, record.error) == (outcome, error)
