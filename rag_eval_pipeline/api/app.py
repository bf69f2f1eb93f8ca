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
import sys
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..core.errors import InputError, StorageError
from ..core.project.project_files import ProjectFiles
from ..core.settings.monitoring_settings import EVALUATION_MODES
from .calls import (
    MAX_BODY,
    PREFIX,
    READ_METHODS,
    ApiError,
    BodyLimit,
    Call,
    Endpoint,
    Json,
    error_response,
    status_of,
)
from .run_endpoints import cancel_run, create_run, get_run, list_runs, regenerate, run_results
from .settings_endpoints import (
    apply_chunk_config,
    apply_chunk_configs,
    clone_profile,
    create_profile,
    delete_profile,
    get_profile,
    list_chunk_configs,
    list_profiles,
    update_profile,
)
from .table_endpoints import (
    compare_runs,
    leaderboard,
    list_baselines,
    list_questions,
    metric_history,
    pin_baseline,
    question_stats,
)
from .tokens import READ_ROLES, ApiToken, TokenStore


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
            return error_response(503, "the server cannot read its token file: its output says why")
        if holder is None:
            return error_response(
                401,
                "a valid token is needed: Authorization: Bearer <token> (`rag-eval tokens create NAME --role R`)",
                {"WWW-Authenticate": "Bearer"},
            )
        if holder.role not in roles:
            return error_response(
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
                return error_response(status_of(exc), str(exc))
            except StorageError as exc:
                return error_response(503, str(exc))
            return Json(result, status_code=endpoint.status)

        return Route(
            PREFIX + endpoint.path, respond, methods=[endpoint.method], name=endpoint.handler.__name__
        )

    async def not_found(request: Request) -> Response:
        holder = authorized(request, frozenset(READ_ROLES))
        if isinstance(holder, Response):
            return holder
        return error_response(
            404, f"no endpoint {request.method} {request.url.path}: GET {PREFIX}/openapi.json lists them"
        )

    routes = [route(e) for e in ENDPOINTS]
    routes.append(Route("/{path:path}", not_found, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]))
    app = Starlette(routes=routes)
    app.add_middleware(BodyLimit)
    return app
