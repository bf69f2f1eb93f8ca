"""The tech spec's HTTP API under /api/v1/eval, served by `rag-eval serve`: each endpoint calls what its
`rag-eval` command calls (the runner for runs, the warehouse and history for tables, the settings owners
for profiles and chunk configs), and answers JSON.

``ENDPOINTS`` is the one list of routes: the app, the OpenAPI document (``GET /openapi.json``) and the
tests' 401/403 sweep are all built from it. Every request needs ``Authorization: Bearer <token>``
(tokens.py): none or an unknown one is 401, a role that may not do it is 403 (GET: every role; any other
method: admin or super-user). Errors are ``{"error": message}`` with the CLI's message: bad input 400 (the
CLI's exit 2), a name or id that is not there 404, a name taken 409, a body of the wrong shape 422, a body
over ``MAX_BODY`` bytes 413.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, get_args

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import InputError, NameTakenError, StorageError, UnknownNameError
from ..core.project.project_files import ProjectFiles
from ..core.runs.caller import acting_as, api_caller
from ..core.settings.monitoring_settings import EVALUATION_MODES
from ..core.tables import json_records
from .tokens import READ_ROLES, WRITE_ROLES, ApiToken, TokenStore

PREFIX = "/api/v1/eval"
MAX_BODY = 64 * 1024  # bytes: the largest body an endpoint takes is a profile's settings
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")  # a profile or chunk config name (lib/partitions.py's rule)
READ_METHODS = frozenset({"GET", "HEAD"})


class ApiError(Exception):
    """An answer other than 2xx, with its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def status_of(exc: Exception) -> int:
    """The HTTP status of an error the project raises (the CLI prints the same message)."""
    from ..runner.run_status import AmbiguousReference, UnknownReference

    if isinstance(exc, ApiError):
        return exc.status
    if isinstance(exc, AmbiguousReference):
        return 400
    if isinstance(exc, UnknownNameError | UnknownReference):
        return 404
    if isinstance(exc, NameTakenError):
        return 409
    if isinstance(exc, InputError):
        return 400
    return 500


@dataclass(frozen=True)
class Call:
    """One request as a handler sees it: its path and query parameters, its JSON body, the token's
    holder and the workspace."""

    files: ProjectFiles
    token: ApiToken
    path: Mapping[str, str]
    query: Mapping[str, list[str]]
    body: Any

    def param(self, name: str) -> str:
        return self.path[name]

    def name(self, param: str) -> str:
        """A path parameter that names a profile or chunk config, checked before it reaches a file."""
        value = self.path[param]
        if not NAME.match(value):
            raise ApiError(400, f"{value[:80]!r} is not a valid name: letters, digits, '_', '.', '-'")
        return value

    def one(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name, [])
        return values[-1] if values else default

    def many(self, name: str) -> list[str]:
        return [v for value in self.query.get(name, []) for v in value.split(",") if v]

    def integer(self, name: str, default: int, minimum: int) -> int:
        text = self.one(name)
        if text is None:
            return default
        if not text.isdigit() or int(text) < minimum:
            raise ApiError(400, f"{name} must be an integer >= {minimum}, got {text[:40]!r}")
        return int(text)

    def paging(self, default_limit: int) -> tuple[int, int]:
        return self.integer("limit", default_limit, 1), self.integer("offset", 0, 0)

    def fields(
        self, allowed: Mapping[str, type | tuple[type, ...]], required: Sequence[str] = ()
    ) -> dict[str, Any]:
        """The JSON object body, each key known and of its type (422 otherwise)."""
        body = {} if self.body is None else self.body
        if not isinstance(body, dict):
            raise ApiError(422, "the body must be a JSON object")
        unknown = sorted(set(body) - set(allowed))
        if unknown:
            raise ApiError(422, f"unknown field(s) {', '.join(unknown)}; known: {', '.join(allowed)}")
        for key in required:
            if key not in body:
                raise ApiError(422, f"the body needs the field {key!r}")
        for key, value in body.items():
            kinds = allowed[key]
            if value is not None and not _is_a(value, kinds):
                raise ApiError(
                    422, f"field {key!r}: expected {_kind_names(kinds)}, got {json.dumps(value)[:80]}"
                )
        return dict(body)


class ObjectList:
    """The kind of a body field that is a list of JSON objects (chunk config entries)."""


def _is_a(value: Any, kinds: type | tuple[type, ...]) -> bool:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if ObjectList in kinds:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if isinstance(value, bool) and bool not in kinds:
        return False
    if isinstance(value, list) and list in kinds:
        return all(isinstance(v, str) for v in value)  # every list field is a list of strings
    return isinstance(value, kinds)


def _kind_names(kinds: type | tuple[type, ...]) -> str:
    names: dict[type, str] = {
        ObjectList: "a list of objects",
        str: "a string",
        int: "an integer",
        bool: "true or false",
        list: "a list of strings",
        dict: "an object",
    }
    return " or ".join(names.get(k, k.__name__) for k in (kinds if isinstance(kinds, tuple) else (kinds,)))


Handler = Callable[[Call], Any]


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # under PREFIX, with {param}s
    handler: Handler
    summary: str
    cli: str  # the `rag-eval` command it calls, for the docs and the OpenAPI description
    query: tuple[str, ...] = ()
    body: Mapping[str, Any] | None = None  # the body's JSON schema
    status: int = 200

    @property
    def roles(self) -> frozenset[str]:
        return frozenset(READ_ROLES if self.method in READ_METHODS else WRITE_ROLES)

    @property
    def params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)


# ---------------------------------------------------------------------------------------------------
# runs


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


def apply_chunk_configs(call: Call) -> Any:
    """``rag-eval chunk-configs apply FILE``, the file's entries in the body: merged by name into
    data/chunk_configs.yaml (added, changed, unchanged), the partitions synced."""
    from ..core.settings.chunk_config_edits import chunk_config_entries
    from ..runner.settings_edits import merge_chunk_config_entries, sync_partitions_of

    body = call.fields({"chunk_configs": ObjectList}, required=["chunk_configs"])
    entries = chunk_config_entries(body["chunk_configs"], "the request body")
    merge = merge_chunk_config_entries(call.files, entries, "the request body")
    changes = sync_partitions_of(call.files)
    return {
        "added": list(merge.added),
        "changed": list(merge.changed),
        "unchanged": list(merge.unchanged),
        "partitions_added": list(changes.add_chunk_configs),
    }


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
        if all(r.status in ENDED_STATUSES for r in selection.runs):  # the CLI's "nothing to cancel"
            raise ApiError(409, f"nothing to cancel: every run of {selection.kind} {selection.ref} had ended")
        with acting_as(api_caller(call.token.name)):
            request = request_cancel(instance, ref)
    if request.status == "ended before":
        raise ApiError(409, f"nothing to cancel: every run of {request.kind} {request.ref} had ended")
    return {
        "id": request.ref,
        "kind": request.kind,
        "status": request.status,
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
    questions = _catalog(call.files) or []
    page = results_page(
        rows,
        question_types=call.many("question_type"),
        profiles=call.many("config_profile_id") + call.many("profile"),
        chunk_configs=call.many("chunk_config"),
        limit=limit,
        offset=offset,
        types_of={q.question_id: q.question_type for q in questions},
        what=f"{selection.kind} {selection.ref}",
    )
    return {"items": json_records(page.rows), "total": page.total, "limit": limit, "offset": offset}


# ---------------------------------------------------------------------------------------------------
# the warehouse's tables


def leaderboard(call: Call) -> Any:
    from ..core.store.warehouse import LEADERBOARD, Warehouse

    board = Warehouse.in_project(call.files.root).read_current(LEADERBOARD)
    if board is None:
        raise ApiError(404, "no leaderboard yet: run `rag-eval run` first")
    return {"items": json_records(board), "total": len(board)}


def _catalog(files: ProjectFiles) -> Any:
    from ..core.questions.question_catalog import catalog
    from ..core.store.warehouse import Warehouse

    table = Warehouse.in_project(files.root).read_current("eval_questions")
    return None if table is None else catalog(table)


NO_QUESTIONS = "no evaluation questions yet: `rag-eval run` (or `rag-eval regenerate-questions`) makes them"


def list_questions(call: Call) -> Any:
    from ..core.questions.question_catalog import check_question_filters, filter_questions

    limit, offset = call.paging(100)
    questions = _catalog(call.files)
    if questions is None:
        raise ApiError(404, NO_QUESTIONS)
    types, documents = call.many("type"), call.many("document")
    check_question_filters(questions, types, documents)
    matching = filter_questions(questions, types, documents)
    page = matching[offset : offset + limit]
    return {"items": [q.record() for q in page], "total": len(matching), "limit": limit, "offset": offset}


def question_stats(call: Call) -> Any:
    from ..core.questions.question_catalog import question_stats as stats_of

    questions = _catalog(call.files)
    if questions is None:
        raise ApiError(404, NO_QUESTIONS)
    stats = stats_of(questions)
    return {
        "total": stats.total,
        "stale": stats.stale,
        "multi_document": stats.multi_document,
        "by_type": dict(stats.by_type),
        "by_document": dict(stats.by_document),
        "rows": stats.records(),
    }


def metric_history(call: Call) -> Any:
    """``rag-eval history METRIC [--partition C|P] [--table T]``."""
    from ..core.store.history import HistoryStore, PartitionKey

    metric = call.name("metric")
    partition_text = call.one("partition")
    partition = PartitionKey.parse(partition_text) if partition_text else None
    with HistoryStore(_warehouse_dir(call.files)) as history:
        table = call.one("table") or history.summary_table_for(metric)
        trend = history.trend(metric, table, partition)
    return {"metric": metric, "table": table, "items": json_records(trend), "total": len(trend)}


def _warehouse_dir(files: ProjectFiles) -> Path:
    from ..core.store.warehouse import Warehouse

    return Warehouse.in_project(files.root).base_dir


def list_baselines(call: Call) -> Any:
    from ..core.evaluation.baselines import BaselineStore

    store = BaselineStore(_warehouse_dir(call.files))
    pinned = [{**asdict(b), "partition": str(b.partition)} for b in store.pinned()]
    return {"items": pinned, "total": len(pinned)}


def pin_baseline(call: Call) -> Any:
    """``rag-eval baseline set REF [--partition C|P]``."""
    from ..core.evaluation.baselines import BaselineStore
    from ..core.store.history import HistoryStore, PartitionKey

    body = call.fields({"ref": str, "partition": str}, required=["ref"])
    partition = PartitionKey.parse(body["partition"]) if body.get("partition") else None
    store = BaselineStore(_warehouse_dir(call.files))
    with HistoryStore(_warehouse_dir(call.files)) as history:
        runs, changes = store.pin_ref(history, body["ref"], partition)
    changed = {c.partition: c for c in changes}
    return {
        "items": [
            {
                "partition": str(r.partition),
                "run_id": r.run_id,
                "evaluation_id": r.evaluation_id,
                "mode": r.mode,
                "changed": r.partition in changed,
                "replaced_run_id": changed[r.partition].replaced_run_id if r.partition in changed else None,
            }
            for r in runs
        ]
    }


def compare_runs(call: Call) -> Any:
    """``rag-eval compare A B [--metrics m,n] [--table T]``, with the regression settings' confidence."""
    import math

    from ..core.evaluation.comparison import compare
    from ..core.settings.monitoring_settings import MonitoringSettings
    from ..core.store.history import HistoryStore

    a, b = call.one("a"), call.one("b")
    if not a or not b:
        raise ApiError(400, "give the two evaluations (or runs) to compare: ?a=ID&b=ID")
    table = call.one("table", "retrieval_metrics") or "retrieval_metrics"
    if table not in ("retrieval_metrics", "answer_metrics"):
        raise ApiError(400, f"table {table[:40]!r}: choose retrieval_metrics or answer_metrics")
    settings = call.files.load_settings(MonitoringSettings).regression
    metrics = tuple(call.many("metrics")) or (
        settings.answer_metrics if table == "answer_metrics" else settings.metrics
    )
    with HistoryStore(_warehouse_dir(call.files)) as history:
        comparison = compare(
            history,
            a,
            b,
            metrics,
            table=table,
            confidence=settings.confidence,
            n_resamples=settings.n_resamples,
            seed=settings.seed,
        )

    def number(value: float) -> float | None:
        return None if math.isnan(value) else value

    return {
        "a": comparison.a.describe(),
        "b": comparison.b.describe(),
        "table": comparison.table,
        "items": [
            {
                "partition": run.label,
                "metric": d.metric,
                "n_paired": d.n_paired,
                "mean_a": number(d.mean_a),
                "mean_b": number(d.mean_b),
                "delta": number(d.delta),
                "ci_low": number(d.ci_low),
                "ci_high": number(d.ci_high),
                "confidence": d.confidence,
                "verdict": d.verdict,
                "difference": run.difference,
            }
            for run in comparison.runs
            for d in run.result.deltas
        ],
        "only_a": [str(p) for p in comparison.only_a],
        "only_b": [str(p) for p in comparison.only_b],
    }


# ---------------------------------------------------------------------------------------------------
# profiles and chunk configs


def _profile_json(profile: Any) -> dict[str, Any]:
    settings = {k: v for k, v in asdict(profile).items() if k not in ("name", "version", "description")}
    return {
        "id": profile.name,
        "name": profile.name,
        "version": profile.version,
        "hash": profile.config_hash,
        "description": profile.description,
        "settings": settings,
    }


def list_profiles(call: Call) -> Any:
    profiles = call.files.load_configs().profiles
    return {"items": [_profile_json(p) for p in profiles], "total": len(profiles)}


def get_profile(call: Call) -> Any:
    name = call.name("name")
    profile = call.files.load_configs().profile(name)
    versions = call.files.profile_versions().history(name)
    return {**_profile_json(profile), "versions": list(versions)}


def _profile_edit(
    call: Call,
    action: str,
    name: str,
    settings: Mapping[str, Any],
    unset: Sequence[str] = (),
    new_name: str | None = None,
) -> Any:
    from ..runner.settings_edits import edit_profile

    if new_name is not None and not NAME.match(new_name):
        raise ApiError(400, f"{new_name[:80]!r} is not a valid profile name: letters, digits, '_', '.', '-'")
    change = edit_profile(call.files, action, name, settings, unset, new_name)  # type: ignore[arg-type]
    return {
        "action": change.edit.action,
        **_profile_json(change.profile),
        "source": change.edit.source,
        "partitions_added": list(change.partitions.add_profiles),
    }


def create_profile(call: Call) -> Any:
    body = call.fields({"name": str, "settings": dict}, required=["name"])
    if not NAME.match(body["name"]):
        raise ApiError(
            400, f"{body['name'][:80]!r} is not a valid profile name: letters, digits, '_', '.', '-'"
        )
    return _profile_edit(call, "create", body["name"], body.get("settings") or {})


def update_profile(call: Call) -> Any:
    body = call.fields({"settings": dict, "unset": list})
    return _profile_edit(
        call, "update", call.name("name"), body.get("settings") or {}, body.get("unset") or ()
    )


def delete_profile(call: Call) -> Any:
    return _profile_edit(call, "delete", call.name("name"), {})


def clone_profile(call: Call) -> Any:
    body = call.fields({"name": str, "settings": dict}, required=["name"])
    return _profile_edit(call, "clone", call.name("name"), body.get("settings") or {}, new_name=body["name"])


def _chunk_config_json(config: Any) -> dict[str, Any]:
    settings = {k: v for k, v in asdict(config).items() if k != "name"}
    return {"id": config.name, "name": config.name, "hash": config.config_hash, "settings": settings}


def list_chunk_configs(call: Call) -> Any:
    configs = call.files.load_configs()
    return {
        "items": [_chunk_config_json(c) for c in configs.chunk_configs],
        "total": len(configs.chunk_configs),
        "max_chunk_configs": configs.max_chunk_configs,
    }


def apply_chunk_config(call: Call) -> Any:
    """``rag-eval chunk-configs apply NAME --document DOC...``: ``affected_documents`` as the CLI says."""
    from ..runner.settings_edits import apply_chunk_config_to_documents, sync_partitions_of

    name = call.name("name")
    body = call.fields({"document_ids": list}, required=["document_ids"])
    if not body["document_ids"]:
        raise ApiError(422, "field 'document_ids': give at least one document id (or glob)")
    applied = apply_chunk_config_to_documents(call.files, name, body["document_ids"], "document_ids")
    sync_partitions_of(call.files)
    return applied.record()


# ---------------------------------------------------------------------------------------------------
# the route list


def openapi_document(call: Call) -> Any:
    return build_openapi()


_LIST = {"type": "array", "items": {"type": "string"}}
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/openapi.json", openapi_document, "this document", "-"),
    Endpoint(
        "POST",
        "/runs",
        create_run,
        "start an evaluation (answers at once with its id)",
        "run [--chunk-configs a,b] [--profiles p] [--mode quick|full] [--sample-size N] [--force]",
        body={
            "type": "object",
            "properties": {
                "chunk_configs": _LIST,
                "profiles": _LIST,
                "mode": {"type": "string", "enum": list(EVALUATION_MODES)},
                "sample_size": {"type": "integer", "minimum": 1},
                "force": {"type": "boolean"},
            },
        },
        status=202,
    ),
    Endpoint(
        "GET", "/runs", list_runs, "the recent evaluations, newest first", "list", query=("limit", "offset")
    ),
    Endpoint(
        "GET", "/runs/{run_id}", get_run, "an evaluation (or a run): status, progress, its runs", "status REF"
    ),
    Endpoint(
        "DELETE",
        "/runs/{run_id}",
        cancel_run,
        "cancel an evaluation or a run: cancelling, then cancelled",
        "cancel REF --wait 0",
        status=202,
    ),
    Endpoint(
        "GET",
        "/runs/{run_id}/results",
        run_results,
        "the per-question results, filtered and paged",
        "results REF [--question-type T] [--profile P] [--chunk-config C] [--limit N] [--offset M]",
        query=("limit", "offset", "question_type", "config_profile_id", "chunk_config"),
    ),
    Endpoint("GET", "/leaderboard", leaderboard, "the current leaderboard", "leaderboard"),
    Endpoint(
        "GET",
        "/questions",
        list_questions,
        "the evaluation questions, filtered and paged",
        "questions list [--type T] [--document DOC]",
        query=("type", "document", "limit", "offset"),
    ),
    Endpoint(
        "GET",
        "/questions/stats",
        question_stats,
        "how many questions: in total, by type, by document",
        "questions stats",
    ),
    Endpoint(
        "POST",
        "/questions/regenerate",
        regenerate,
        "regenerate the synthetic questions, of every document or of some (answers at once with its id)",
        "regenerate-questions [--document DOC...] [--generator G]",
        body={
            "type": "object",
            "properties": {"document_ids": _LIST, "generator": {"type": "string"}},
        },
        status=202,
    ),
    Endpoint(
        "GET",
        "/metrics/{metric}/history",
        metric_history,
        "a metric's mean per partition over time",
        "history METRIC [--partition C|P] [--table T]",
        query=("partition", "table"),
    ),
    Endpoint("GET", "/baselines", list_baselines, "the pinned baselines", "baseline list"),
    Endpoint(
        "POST",
        "/baselines",
        pin_baseline,
        "pin an evaluation's (or run's) partitions as baselines",
        "baseline set REF [--partition C|P]",
        body={
            "type": "object",
            "properties": {"ref": {"type": "string"}, "partition": {"type": "string"}},
            "required": ["ref"],
        },
    ),
    Endpoint(
        "GET",
        "/compare",
        compare_runs,
        "per-metric differences B - A with paired bootstrap intervals",
        "compare A B [--metrics m,n] [--table T]",
        query=("a", "b", "metrics", "table"),
    ),
    Endpoint("GET", "/profiles", list_profiles, "the retrieval profiles", "profiles list"),
    Endpoint(
        "POST",
        "/profiles",
        create_profile,
        "create a profile",
        "profiles create NAME --set K=V",
        body={
            "type": "object",
            "properties": {"name": {"type": "string"}, "settings": {"type": "object"}},
            "required": ["name"],
        },
        status=201,
    ),
    Endpoint(
        "GET",
        "/profiles/{name}",
        get_profile,
        "one profile: settings, version, hash, versions",
        "profiles show NAME",
    ),
    Endpoint(
        "PUT",
        "/profiles/{name}",
        update_profile,
        "change a profile's settings",
        "profiles update NAME --set K=V [--unset K]",
        body={"type": "object", "properties": {"settings": {"type": "object"}, "unset": _LIST}},
    ),
    Endpoint(
        "DELETE",
        "/profiles/{name}",
        delete_profile,
        "remove a profile (its partitions and history stay)",
        "profiles delete NAME",
    ),
    Endpoint(
        "POST",
        "/profiles/{name}/clone",
        clone_profile,
        "copy a profile under a new name",
        "profiles clone NAME NEW [--set K=V]",
        body={
            "type": "object",
            "properties": {"name": {"type": "string"}, "settings": {"type": "object"}},
            "required": ["name"],
        },
        status=201,
    ),
    Endpoint("GET", "/chunk-configs", list_chunk_configs, "the chunk configs", "chunk-configs list"),
    Endpoint(
        "POST",
        "/chunk-configs",
        apply_chunk_configs,
        "merge chunk configs by name into data/chunk_configs.yaml",
        "chunk-configs apply FILE",
        body={
            "type": "object",
            "properties": {"chunk_configs": {"type": "array", "items": {"type": "object"}}},
            "required": ["chunk_configs"],
        },
    ),
    Endpoint(
        "POST",
        "/chunk-configs/{name}/apply",
        apply_chunk_config,
        "apply a chunk config to more documents",
        "chunk-configs apply NAME --document DOC",
        body={"type": "object", "properties": {"document_ids": _LIST}, "required": ["document_ids"]},
    ),
)

_PATH_PARAM_DESCRIPTIONS = {
    "run_id": "an evaluation id or a Dagster run id, or a unique prefix of either",
    "name": "a profile or chunk config name",
    "metric": "a metric name, e.g. span_iou, mrr",
}


def build_openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``ENDPOINTS``."""
    error = {
        "description": "an error",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in ENDPOINTS:
        parameters = [
            {
                "name": p,
                "in": "path",
                "required": True,
                "schema": {"type": "string"},
                "description": _PATH_PARAM_DESCRIPTIONS.get(p, p),
            }
            for p in endpoint.params
        ] + [
            {"name": q, "in": "query", "required": False, "schema": {"type": "string"}}
            for q in endpoint.query
        ]
        operation: dict[str, Any] = {
            "summary": endpoint.summary,
            "description": f"`rag-eval {endpoint.cli}`. Roles: {', '.join(sorted(endpoint.roles))}.",
            "operationId": endpoint.handler.__name__,
            "parameters": parameters,
            "responses": {
                str(endpoint.status): {
                    "description": "done",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **{str(code): error for code in (400, 401, 403, 404, 409, 413, 422)},
            },
        }
        if endpoint.body is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": endpoint.body}},
            }
        paths.setdefault(PREFIX + endpoint.path, {})[endpoint.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "rag_eval_pipeline evaluation API", "version": "1"},
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {"error": {"type": "string"}},
                    "required": ["error"],
                }
            },
        },
        "security": [{"bearer": []}],
    }


# ---------------------------------------------------------------------------------------------------
# the app


class Json(JSONResponse):
    """JSON with NaN and infinities as null (a metric with no value), anything else unknown as text."""

    def render(self, content: Any) -> bytes:
        return json.dumps(_finite(content), ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Json:
    return Json({"error": message}, status_code=status, headers=dict(headers or {}))


class BodyLimit:
    """Refuses a body over ``MAX_BODY`` bytes (413) before an endpoint reads it, by its Content-Length
    or, without one, as it arrives."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            await _error(413, f"the request body is over {MAX_BODY} bytes")(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(root: Path) -> Starlette:
    """The API over the workspace ``root``."""
    files = ProjectFiles.in_project(root)
    store = TokenStore(root)

    def authorized(request: Request, roles: frozenset[str]) -> ApiToken | Response:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        try:
            holder = store.holder(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        except InputError as exc:  # a damaged token file: said here, not to whoever asks
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return _error(503, "the server cannot read its token file: its output says why")
        if holder is None:
            return _error(
                401,
                "a valid token is needed: Authorization: Bearer <token> (`rag-eval tokens create NAME --role R`)",
                {"WWW-Authenticate": "Bearer"},
            )
        if holder.role not in roles:
            return _error(
                403, f"token {holder.name!r} has role {holder.role}; this needs {' or '.join(sorted(roles))}"
            )
        return holder

    async def read_body(request: Request) -> Any:
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise ApiError(413, f"the request body is over {MAX_BODY} bytes")
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(422, f"the body is not JSON: {exc}") from None

    def route(endpoint: Endpoint) -> Route:
        async def respond(request: Request) -> Response:
            holder = authorized(request, endpoint.roles)
            if isinstance(holder, Response):
                return holder
            try:
                body = await read_body(request) if endpoint.method not in READ_METHODS else None
                query: dict[str, list[str]] = {}
                for key, value in request.query_params.multi_items():
                    query.setdefault(key, []).append(value)
                call = Call(files, holder, dict(request.path_params), query, body)
                result = await run_in_threadpool(endpoint.handler, call)
            except (ApiError, InputError) as exc:
                return _error(status_of(exc), str(exc))
            except StorageError as exc:
                return _error(503, str(exc))
            return Json(result, status_code=endpoint.status)

        return Route(
            PREFIX + endpoint.path, respond, methods=[endpoint.method], name=endpoint.handler.__name__
        )

    async def not_found(request: Request) -> Response:
        holder = authorized(request, frozenset(READ_ROLES))
        if isinstance(holder, Response):
            return holder
        return _error(
            404, f"no endpoint {request.method} {request.url.path}: GET {PREFIX}/openapi.json lists them"
        )

    routes = [route(e) for e in ENDPOINTS]
    routes.append(Route("/{path:path}", not_found, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]))
    app = Starlette(routes=routes)
    app.add_middleware(BodyLimit)
    return app
