"""The process one evaluation started over HTTP runs in (evaluations.py starts it):
``python -m rag_eval_pipeline.api.worker WORKSPACE EVALUATION_ID``. It runs the evaluation as `rag-eval
run` does (runner/evaluate.py), in its main thread, as the API token's holder (core/runs/caller.py), and
writes the plan, then the end, into the evaluation's record. Its output is the record's .log file."""

from __future__ import annotations

import signal
import sys
import traceback
from pathlib import Path

from ..core.errors import InputError, StorageError
from ..core.project.project_files import ProjectFiles
from ..core.runs.caller import acting_as, api_caller
from .evaluations import EvaluationRecord, EvaluationRecords


class RecordEvents:
    """What the evaluation says before its runs: warnings to the log, the plan into the record."""

    def __init__(self, records: EvaluationRecords, evaluation_id: str) -> None:
        self.records = records
        self.evaluation_id = evaluation_id

    def warning(self, text: str) -> None:
        print(f"warning: {text}", file=sys.stderr, flush=True)

    def starting(self, start: object) -> None:
        from ..runner.evaluate import EvaluationStart

        assert isinstance(start, EvaluationStart)
        plan = [[r.stage, *r.key] for r in start.plan]
        print(f"evaluation {self.evaluation_id}: {start.plan_summary}, {start.where}", flush=True)
        self.records.update(self.evaluation_id, plan=plan)


def run_worker(root: Path, evaluation_id: str) -> int:
    from ..runner.evaluate import EvaluationOrder, evaluate

    records = EvaluationRecords(root)
    record = records.read(evaluation_id)
    if record is None:
        print(f"no evaluation record {evaluation_id} in {root}", file=sys.stderr)
        return 1
    if record.kind == "regeneration":
        return _regenerate(root, record, records)
    order = EvaluationOrder(
        chunk_configs=record.chunk_configs,
        profiles=record.profiles,
        mode=record.mode,
        sample_size=record.sample_size,
        force=record.force,
        evaluation_id=evaluation_id,
    )
    try:
        with acting_as(api_caller(record.triggered_by)):
            outcome = evaluate(ProjectFiles.in_project(root), order, RecordEvents(records, evaluation_id))
    except KeyboardInterrupt:  # a cancel (cancel_pending's SIGINT), inside evaluate() or before it
        records.update(evaluation_id, ended=True, outcome="cancelled")
        return 130
    except (InputError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        records.update(evaluation_id, ended=True, outcome="failed", error=str(exc))
        return 2 if isinstance(exc, InputError) else 1
    except BaseException as exc:
        traceback.print_exc()
        records.update(evaluation_id, ended=True, outcome="failed", error=f"{type(exc).__name__}: {exc}")
        return 1
    result = "cancelled" if outcome.cancelled else ("completed" if outcome.exit_code == 0 else "failed")
    print(f"evaluation {evaluation_id}: {outcome.counts()}", flush=True)
    records.update(evaluation_id, ended=True, outcome=result)
    return outcome.exit_code


def _regenerate(root: Path, record: EvaluationRecord, records: EvaluationRecords) -> int:
    """`rag-eval regenerate-questions` for the record: one ingestion run tagged with its id."""
    from ..runner.instance import project_instance
    from ..runner.regenerate import regenerate_questions

    evaluation_id = record.evaluation_id
    try:
        with acting_as(api_caller(record.triggered_by)), project_instance(root) as instance:
            outcome = regenerate_questions(
                instance,
                generator=record.generator,
                documents=record.documents,
                evaluation_id=evaluation_id,
            )
    except KeyboardInterrupt:
        records.update(evaluation_id, ended=True, outcome="cancelled")
        return 130
    except BaseException as exc:
        traceback.print_exc()
        records.update(evaluation_id, ended=True, outcome="failed", error=f"{type(exc).__name__}: {exc}")
        return 1
    print(outcome.describe(), flush=True)
    if outcome.failure is not None:
        records.update(evaluation_id, ended=True, outcome="failed", error=str(outcome.failure))
        return 2 if outcome.failure.bad_input else 1
    records.update(evaluation_id, ended=True, outcome="completed", result=outcome.record())
    return 0


def main() -> int:
    from ..core.redaction import install_log_redaction, install_stream_redaction

    # a cancel before the first run interrupts the worker as Ctrl-C interrupts `rag-eval run`, even when
    # the server was started with SIGINT ignored (a background job)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    install_stream_redaction()
    install_log_redaction()
    root, evaluation_id = Path(sys.argv[1]), sys.argv[2]
    return run_worker(root, evaluation_id)


if __name__ == "__main__":
    sys.exit(main())
