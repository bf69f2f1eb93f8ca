"""The runs: start (a worker process, evaluations.py), list, show with progress, cancel, and each
run's per-question results; regeneration of the questions, followed as a run."""

from __future__ import annotations

from typing import Any, get_args

from ..core.project.project_files import ProjectFiles
from ..core.runs.caller import acting_as, api_caller
from ..core.settings.monitoring_settings import EVALUATION_MODES
from ..core.tables import json_records
from .calls import (
    NAME,
    ApiError,
    Call,
)
from .table_endpoints import catalog_of


def _instance(files: ProjectFiles) -> Any:
    from ..runner.instance import project_instance

    return project_instance(files.root)


def create_run(call: Call) -> Any:
    from .evaluations import EvaluationOrderBody, start_evaluation, view_evaluation

    body = call.fields(
        {"chunk_configs": list, "profiles": list, "mode": str, "sample_size": int, "force": bool}
    )
    if body.get("mode") is not None and body["mode"] not in EVALUATION_MODES:
        raise ApiError(422, f"field 'mode': choose one of {', '.join(EVALUATION_MODES)}")
    for key in ("chunk_configs", "profiles"):
        for value in body.get(key) or ():
            if not NAME.match(value):
                raise ApiError(400, f"{key}: {value[:80]!r} is not a valid name")
    order = EvaluationOrderBody(**{k: v for k, v in body.items() if v is not None})
    record = start_evaluation(call.files, order, call.token.name)
    with _instance(call.files) as instance:
        return view_evaluation(instance, call.files, record.evaluation_id).record(with_runs=False)


def regenerate(call: Call) -> Any:
    """``rag-eval regenerate-questions [--document DOC...] [--generator G]``, in a worker: answers at once
    with the id `GET /runs/{id}` follows."""
    from ..core.generation.settings import TokenLevelGenerator
    from .evaluations import start_regeneration, view_evaluation

    body = call.fields({"document_ids": list, "generator": str})
    generators = get_args(TokenLevelGenerator)
    if body.get("generator") is not None and body["generator"] not in generators:
        raise ApiError(422, f"field 'generator': choose one of {', '.join(generators)}")
    if body.get("document_ids") == []:
        raise ApiError(
            422, "field 'document_ids': give at least one document id (or glob), or leave it out for all"
        )
    record = start_regeneration(call.files, body.get("document_ids"), body.get("generator"), call.token.name)
    with _instance(call.files) as instance:
        return view_evaluation(instance, call.files, record.evaluation_id).record(with_runs=False)


def list_runs(call: Call) -> Any:
    from .evaluations import list_evaluations

    limit, offset = call.paging(20)
    with _instance(call.files) as instance:
        items, total = list_evaluations(instance, call.files, limit, offset)
    return {
        "items": [v.record(with_runs=False) for v in items],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


def get_run(call: Call) -> Any:
    from .evaluations import check_ref, view_evaluation

    ref = check_ref(call.param("run_id"))
    with _instance(call.files) as instance:
        return view_evaluation(instance, call.files, ref).record()


def cancel_run(call: Call) -> Any:
    """``rag-eval cancel REF --wait 0``: ask, and answer at once (``cancelling``; ``cancelled`` where
    nothing was running it)."""
    from ..runner.cancel import request_cancel
    from ..runner.outcome import ENDED_STATUSES
    from ..runner.run_status import UnknownReference, find_runs
    from .evaluations import EvaluationRecords, cancel_pending, check_ref

    ref = check_ref(call.param("run_id"))
    with _instance(call.files) as instance:
        try:
            selection = find_runs(instance, ref)
        except UnknownReference:
            record = EvaluationRecords(call.files.root).read(ref)
            if record is None or record.ended:
                raise
            if cancel_pending(call.files, record):
                return {"id": ref, "kind": "evaluation", "status": "cancelling", "runs": []}
            raise
        # between two runs every run so far has ended, but the worker goes on: the request's tag stops
        # it before its next run (runner/cancel.py)
        record = EvaluationRecords(call.files.root).read(ref) if selection.kind == "evaluation" else None
        between_runs = record is not None and not record.ended and not record.worker_gone()
        if all(r.status in ENDED_STATUSES for r in selection.runs) and not between_runs:
            raise ApiError(409, f"nothing to cancel: every run of {selection.kind} {selection.ref} had ended")
        with acting_as(api_caller(call.token.name)):
            request = request_cancel(instance, ref)
    status = request.status
    if status == "ended before":
        if not between_runs:
            raise ApiError(409, f"nothing to cancel: every run of {request.kind} {request.ref} had ended")
        status = "cancelling"
    return {
        "id": request.ref,
        "kind": request.kind,
        "status": status,
        "requested": request.requested,
        "runs": [
            {
                "run_id": r.run_id,
                "job": r.job_name,
                "partition": r.partition,
                "before": r.before,
                "action": r.action,
            }
            for r in request.runs
        ],
    }


def run_results(call: Call) -> Any:
    """``rag-eval results REF``: the per-question rows of the evaluation's runs, filtered and paged."""
    from ..core.evaluation.run_results import results_page
    from ..core.store.warehouse import Warehouse
    from ..runner.run_status import find_runs, question_rows_of_runs
    from .evaluations import check_ref

    ref = check_ref(call.param("run_id"))
    limit, offset = call.paging(50)
    with _instance(call.files) as instance:
        selection = find_runs(instance, ref)
    warehouse = Warehouse.in_project(call.files.root)
    rows = question_rows_of_runs(warehouse.base_dir, selection.runs)
    total_rows = 0 if rows.empty else len(rows)
    if not total_rows:
        return {"items": [], "total": 0, "limit": limit, "offset": offset}
    questions = catalog_of(call.files) or []
    page = results_page(
        rows,
        question_types=call.many("question_type"),
        profiles=call.many("config_profile_id"),
        chunk_configs=call.many("chunk_config"),
        limit=limit,
        offset=offset,
        types_of={q.question_id: q.question_type for q in questions},
        what=f"{selection.kind} {selection.ref}",
    )
    return {"items": json_records(page.rows), "total": page.total, "limit": limit, "offset": offset}
