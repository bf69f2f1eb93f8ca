"""What every endpoint shares: the request as a handler sees it (``Call``: its parameters and its JSON
body, checked), the errors and their HTTP status (the CLI's message; 400 for its exit 2), the JSON
answer, the body cap, and ``Endpoint``, one row of app.py's route list."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import InputError, NameTakenError, UnknownNameError
from ..core.project.project_files import ProjectFiles
from .tokens import READ_ROLES, WRITE_ROLES, ApiToken

PREFIX = "/api/v1/eval"
MAX_BODY = 64 * 1024  # bytes: the largest bodies are a profile's settings and a few chunk configs
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


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> Json:
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
            await error_response(413, f"the request body is over {MAX_BODY} bytes")(scope, receive, send)
            return
        await self.app(scope, receive, send)
