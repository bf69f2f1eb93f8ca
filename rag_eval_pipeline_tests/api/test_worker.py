"""The API's worker process records how its evaluation ended: a cancel that interrupts it anywhere
(cancel_pending sends SIGINT, which may land before `evaluate` is inside its own handler) is a cancel,
never a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.api import worker
from rag_eval_pipeline.api.evaluations import EvaluationRecord, EvaluationRecords
from rag_eval_pipeline.runner import evaluate as evaluate_module
from rag_eval_pipeline.runner import regenerate


def _recorded(root: Path, kind: str) -> EvaluationRecords:
    records = EvaluationRecords(root)
    records.write(EvaluationRecord("eval-1", "ops-admin", "2026-12-04T00:00:00+00:00", kind=kind))  # type: ignore[arg-type]
    return records


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), evaluate_module.EvaluationInterrupted("eval-1")])
def test_an_interrupted_evaluation_is_recorded_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: KeyboardInterrupt
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(evaluate_module, "evaluate", interrupted)
    records = _recorded(tmp_path, "evaluation")
    assert worker.run_worker(tmp_path, "eval-1") == 130
    record = records.read("eval-1")
    assert record is not None and record.ended and record.outcome == "cancelled" and not record.error


def test_an_interrupted_regeneration_is_recorded_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(regenerate, "regenerate_questions", interrupted)
    records = _recorded(tmp_path, "regeneration")
    assert worker.run_worker(tmp_path, "eval-1") == 130
    record = records.read("eval-1")
    assert record is not None and record.ended and record.outcome == "cancelled"


def test_an_error_is_recorded_failed_with_its_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(evaluate_module, "evaluate", broken)
    records = _recorded(tmp_path, "evaluation")
    assert worker.run_worker(tmp_path, "eval-1") == 1
    record = records.read("eval-1")
    assert (
        record is not None
        and record.outcome == "failed"
        and record.error == "RuntimeError: the disk went away"
    )
