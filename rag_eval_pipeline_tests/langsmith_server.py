"""A local HTTP server that speaks the parts of the LangSmith REST API the `langsmith` 0.15 Client uses
for datasets and experiments, with in-memory state and scripted faults.

The real `langsmith.Client` talks to it; nothing leaves the machine. Routes (relative to the API URL):

- ``GET /info``: server capabilities (no auth, like the real one); ``instance_flags`` switches the SDK
  between the multipart example endpoints and the legacy ``/examples/bulk`` ones.
- ``GET|POST /datasets``, ``GET /datasets/{id}``: read by name (a list, empty when unknown), create
  (409 when the name is taken).
- ``GET /examples?dataset=...&offset&limit``: newest first, like a database default, so callers must
  order examples themselves.
- ``POST|PATCH /v1/platform/datasets/{id}/examples``: multipart create/update (parts ``{id}``,
  ``{id}.inputs``, ``{id}.outputs``); ``POST|PATCH /examples/bulk``: the legacy JSON equivalents.
- ``GET|POST /sessions``, ``GET|PATCH /sessions/{id}``: projects (experiments); 409 on a taken name.
- ``POST /runs``: one run, whose session and reference example must exist.
- ``POST /feedback``: one feedback, whose run must exist.

Like LangSmith, the server adds ``metadata.dataset_split = ["base"]`` to every example, and every
request but ``/info`` needs the right ``x-api-key`` (401 otherwise).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from requests_toolbelt.multipart.decoder import MultipartDecoder

API_KEY = "lsv2_pt_0123456789abcdef0123456789abcdef_0123456789"
TENANT_ID = "5f0c5b1e-2d1a-4c5e-9a7b-0123456789ab"


@dataclass
class Fault:
    """Served instead of the real reply to the next request matching ``method`` and ``path`` (a substring)."""

    status: int = 500
    delay_s: float = 0.0
    method: str | None = None
    path: str | None = None
    times: int = 1

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (self.path is None or self.path in path)


@dataclass
class LangSmithState:
    api_key: str = API_KEY
    multipart_examples: bool = True
    faults: list[Fault] = field(default_factory=list)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    examples: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    feedback: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path without query)
    auth_headers: list[str] = field(default_factory=list)  # x-api-key of every request
    lock: threading.RLock = field(default_factory=threading.RLock)

    def dataset_examples(self, dataset_name: str) -> list[dict[str, Any]]:
        dataset_id = next(d["id"] for d in self.datasets.values() if d["name"] == dataset_name)
        return [e for e in self.examples.values() if e["dataset_id"] == dataset_id]

    def session_named(self, name: str) -> dict[str, Any]:
        return next(s for s in self.sessions.values() if s["name"] == name)

    def runs_of(self, session_id: str) -> list[dict[str, Any]]:
        return [r for r in self.runs.values() if r["session_id"] == session_id]

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.requests if m != "GET"]


class HttpError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _iso(value: Any) -> str:
    return value if isinstance(value, str) and value else _now()


def _uuid(value: Any, what: str) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise HttpError(422, f"{what} is not a UUID: {value!r}") from None


class _Api:
    """The routes, over one state; every method runs under the state's lock."""

    def __init__(self, state: LangSmithState) -> None:
        self.s = state
        # LangSmith always has a "default" project; the SDK reads the tenant id from the first one listed
        default = self._session_row({"name": "default"})
        self.s.sessions[default["id"]] = default

    def route(self, method: str, path: str, query: dict[str, list[str]], body: bytes, ctype: str) -> Any:
        parts = [p for p in path.split("/") if p]
        if parts[:2] == ["v1", "platform"]:
            parts = parts[2:]
        key = (method, "/".join("{id}" if _UUID.fullmatch(p) else p for p in parts))
        handlers = {
            ("GET", "datasets"): lambda: self.list_datasets(query),
            ("POST", "datasets"): lambda: self.create_dataset(_json(body)),
            ("GET", "datasets/{id}"): lambda: self.dataset(parts[1]),
            ("GET", "examples"): lambda: self.list_examples(query),
            ("POST", "examples/bulk"): lambda: self.bulk_create(_json(body)),
            ("PATCH", "examples/bulk"): lambda: self.bulk_update(_json(body)),
            ("POST", "datasets/{id}/examples"): lambda: self.multipart_create(parts[1], body, ctype),
            ("PATCH", "datasets/{id}/examples"): lambda: self.multipart_update(parts[1], body, ctype),
            ("GET", "sessions"): lambda: self.list_sessions(query),
            ("POST", "sessions"): lambda: self.create_session(_json(body), query),
            ("GET", "sessions/{id}"): lambda: self.session(parts[1]),
            ("PATCH", "sessions/{id}"): lambda: self.update_session(parts[1], _json(body)),
            ("POST", "runs"): lambda: self.create_run(_json(body)),
            ("POST", "feedback"): lambda: self.create_feedback(_json(body)),
        }
        if key not in handlers:
            raise HttpError(404, f"no route {method} {path}")
        with self.s.lock:
            return handlers[key]()

    # datasets

    def list_datasets(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        rows = list(self.s.datasets.values())
        if "name" in query:
            rows = [d for d in rows if d["name"] == query["name"][0]]
        return [self._dataset_row(d) for d in rows[: int(query.get("limit", ["100"])[0])]]

    def dataset(self, dataset_id: str) -> dict[str, Any]:
        return self._dataset_row(self._get(self.s.datasets, dataset_id, "dataset"))

    def create_dataset(self, body: dict[str, Any]) -> dict[str, Any]:
        if any(d["name"] == body["name"] for d in self.s.datasets.values()):
            raise HttpError(409, f"Dataset {body['name']} already exists")
        row = {
            "id": str(uuid.uuid4()),
            "name": body["name"],
            "description": body.get("description"),
            "data_type": body.get("data_type", "kv"),
            "created_at": _now(),
            "extra": body.get("extra") or {},
        }
        self.s.datasets[row["id"]] = row
        return self._dataset_row(row)

    def _dataset_row(self, row: dict[str, Any]) -> dict[str, Any]:
        n_examples = sum(e["dataset_id"] == row["id"] for e in self.s.examples.values())
        return {
            **{k: v for k, v in row.items() if k != "extra"},
            "modified_at": row["created_at"],
            "example_count": n_examples,
            "session_count": sum(s["reference_dataset_id"] == row["id"] for s in self.s.sessions.values()),
            "metadata": (row["extra"] or {}).get("metadata"),
            "tenant_id": TENANT_ID,
        }

    # examples

    def list_examples(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        rows = list(self.s.examples.values())
        if "dataset" in query:
            rows = [e for e in rows if e["dataset_id"] == query["dataset"][0]]
        if "id" in query:
            rows = [e for e in rows if e["id"] in query["id"]]
        rows.sort(key=lambda e: e["created_at"], reverse=True)
        offset, limit = int(query.get("offset", ["0"])[0]), int(query.get("limit", ["100"])[0])
        return rows[offset : offset + limit]

    def _new_example(self, dataset_id: str, example_id: str | None, fields: dict[str, Any]) -> str:
        self._get(self.s.datasets, dataset_id, "dataset")
        example_id = _uuid(example_id, "example id") if example_id else str(uuid.uuid4())
        if example_id in self.s.examples:
            raise HttpError(409, f"example {example_id} already exists")
        created = _iso(fields.get("created_at"))
        self.s.examples[example_id] = {
            "id": example_id,
            "dataset_id": dataset_id,
            "inputs": fields.get("inputs") or {},
            "outputs": fields.get("outputs"),
            "metadata": {"dataset_split": ["base"], **(fields.get("metadata") or {})},
            "created_at": created,
            "modified_at": created,
            "source_run_id": None,
        }
        return example_id

    def _update_example(self, example_id: str, fields: dict[str, Any], dataset_id: str | None = None) -> None:
        row = self._get(self.s.examples, _uuid(example_id, "example id"), "example")
        if dataset_id is not None and row["dataset_id"] != dataset_id:
            raise HttpError(404, f"example {example_id} is not in dataset {dataset_id}")
        for key in ("inputs", "outputs"):
            if fields.get(key) is not None:
                row[key] = fields[key]
        if fields.get("metadata") is not None:
            row["metadata"] = {"dataset_split": ["base"], **fields["metadata"]}
        row["modified_at"] = _now()

    def bulk_create(self, body: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self._legacy_only()
        ids = [self._new_example(_uuid(e["dataset_id"], "dataset_id"), e.get("id"), e) for e in body]
        return [self.s.examples[i] for i in ids]

    def bulk_update(self, body: list[dict[str, Any]]) -> dict[str, Any]:
        self._legacy_only()
        for update in body:
            self._update_example(update["id"], update)
        return {"message": f"{len(body)} examples updated", "count": len(body)}

    def multipart_create(self, dataset_id: str, body: bytes, ctype: str) -> dict[str, Any]:
        self._multipart_only()
        parsed = _example_parts(body, ctype)
        ids = [self._new_example(_uuid(dataset_id, "dataset id"), i, fields) for i, fields in parsed.items()]
        return {"example_ids": ids, "count": len(ids), "as_of": _now()}

    def multipart_update(self, dataset_id: str, body: bytes, ctype: str) -> dict[str, Any]:
        self._multipart_only()
        parsed = _example_parts(body, ctype)
        for example_id, fields in parsed.items():
            self._update_example(example_id, fields, _uuid(dataset_id, "dataset id"))
        return {"example_ids": list(parsed), "count": len(parsed), "as_of": _now()}

    def _legacy_only(self) -> None:
        if self.s.multipart_examples:
            raise HttpError(410, "use the multipart examples endpoints")

    def _multipart_only(self) -> None:
        if not self.s.multipart_examples:
            raise HttpError(404, "this deployment has no multipart examples endpoint")

    # sessions (projects, experiments)

    def list_sessions(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        rows = list(self.s.sessions.values())
        if "name" in query:
            rows = [s for s in rows if s["name"] == query["name"][0]]
        return rows[: int(query.get("limit", ["100"])[0])]

    def session(self, session_id: str) -> dict[str, Any]:
        return self._get(self.s.sessions, _uuid(session_id, "session id"), "session")

    def create_session(self, body: dict[str, Any], query: dict[str, list[str]]) -> dict[str, Any]:
        same_name = [s for s in self.s.sessions.values() if s["name"] == body["name"]]
        if same_name:
            if query.get("upsert") == ["true"]:
                return same_name[0]
            raise HttpError(409, f"Session {body['name']} already exists")
        if body.get("reference_dataset_id") is not None:
            self._get(self.s.datasets, _uuid(body["reference_dataset_id"], "reference_dataset_id"), "dataset")
        row = self._session_row(body)
        self.s.sessions[row["id"]] = row
        return row

    def update_session(self, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
        row = self.session(session_id)
        row.update({k: v for k, v in body.items() if v is not None and k in row})
        return row

    def _session_row(self, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": _uuid(body.get("id") or uuid.uuid4(), "session id"),
            "name": body["name"],
            "description": body.get("description"),
            "start_time": _now(),
            "end_time": None,
            "extra": body.get("extra"),
            "tenant_id": TENANT_ID,
            "reference_dataset_id": body.get("reference_dataset_id"),
            # transport-only fields the SDK sends for progress bars
            "num_examples": body.get("num_examples"),
            "evaluator_keys": body.get("evaluator_keys"),
        }

    # runs and feedback

    def create_run(self, body: dict[str, Any]) -> dict[str, Any]:
        for required in ("id", "name", "run_type", "inputs", "start_time"):
            if body.get(required) is None:
                raise HttpError(422, f"run field {required} is required")
        session: dict[str, Any] | None
        if body.get("session_id"):
            session = self.session(body["session_id"])
        elif body.get("session_name"):
            session = next((s for s in self.s.sessions.values() if s["name"] == body["session_name"]), None)
            if session is None:
                session = self.create_session({"name": body["session_name"]}, {})
        else:
            raise HttpError(422, "run needs session_id or session_name")
        if body.get("reference_example_id") is not None:
            self._get(self.s.examples, _uuid(body["reference_example_id"], "reference_example_id"), "example")
        run_id = _uuid(body["id"], "run id")
        if run_id in self.s.runs:
            raise HttpError(409, f"run {run_id} already exists")
        self.s.runs[run_id] = {**body, "id": run_id, "session_id": session["id"]}
        return {}

    def create_feedback(self, body: dict[str, Any]) -> dict[str, Any]:
        run = self._get(self.s.runs, _uuid(body.get("run_id"), "run_id"), "run")
        if (
            body.get("session_id") is not None
            and _uuid(body["session_id"], "session_id") != run["session_id"]
        ):
            raise HttpError(422, f"run {run['id']} is not in session {body['session_id']}")
        if not body.get("key"):
            raise HttpError(422, "feedback key is required")
        feedback_id = _uuid(body.get("id") or uuid.uuid4(), "feedback id")
        if feedback_id in self.s.feedback:
            raise HttpError(409, f"feedback {feedback_id} already exists")
        self.s.feedback[feedback_id] = {**body, "id": feedback_id}
        return self.s.feedback[feedback_id]

    def _get(self, table: dict[str, dict[str, Any]], key: str, what: str) -> dict[str, Any]:
        if key not in table:
            raise HttpError(404, f"{what} {key} not found")
        return table[key]


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except json.JSONDecodeError as exc:
        raise HttpError(422, f"body is not JSON: {exc}") from None


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PART_NAME = re.compile(r'name="([^"]+)"')


def _example_parts(body: bytes, ctype: str) -> dict[str, dict[str, Any]]:
    """Multipart example parts grouped by example id: ``{id: {**body part, inputs, outputs}}``."""
    if not ctype.startswith("multipart/form-data"):
        raise HttpError(415, f"expected multipart/form-data, got {ctype!r}")
    examples: dict[str, dict[str, Any]] = {}
    for part in MultipartDecoder(body, ctype).parts:
        match = _PART_NAME.search(part.headers[b"Content-Disposition"].decode())
        if match is None:
            raise HttpError(422, "multipart part without a name")
        example_id, _, suffix = match.group(1).partition(".")
        value = _json(part.content)
        fields = examples.setdefault(example_id, {})
        if suffix in ("inputs", "outputs"):
            fields[suffix] = value
        elif suffix == "":
            fields.update(value)
        else:
            raise HttpError(422, f"unsupported part {match.group(1)!r}")
    return examples


@contextmanager
def langsmith_server(multipart_examples: bool = True) -> Iterator[tuple[str, LangSmithState]]:
    """Yields the API URL (``http://127.0.0.1:<port>``) and the inspectable, scriptable state."""
    state = LangSmithState(multipart_examples=multipart_examples)
    api = _Api(state)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

        def _handle(self, method: str) -> None:
            url = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with state.lock:
                state.requests.append((method, url.path))
                state.auth_headers.append(self.headers.get("x-api-key", ""))
                fault = next((f for f in state.faults if f.matches(method, url.path)), None)
                if fault is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        state.faults.remove(fault)
            if fault is not None:
                time.sleep(fault.delay_s)
                if fault.status:
                    self._reply(fault.status, {"detail": "scripted fault"})
                    return
            if url.path.rstrip("/") == "/info":
                flags = {"dataset_examples_multipart_enabled": state.multipart_examples}
                self._reply(200, {"version": "0.11.0", "instance_flags": flags, "batch_ingest_config": {}})
                return
            if self.headers.get("x-api-key") != state.api_key:
                self._reply(401, {"detail": "Invalid token"})
                return
            try:
                payload = api.route(
                    method, url.path, parse_qs(url.query), body, self.headers.get("Content-Type", "")
                )
            except HttpError as exc:
                self._reply(exc.status, {"detail": exc.detail})
                return
            except (KeyError, TypeError, ValueError) as exc:
                self._reply(422, {"detail": f"malformed request: {exc!r}"})
                return
            self._reply(200, payload)

        def _reply(self, status: int, payload: Any) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            return  # a client that timed out and hung up is part of the script, not a test failure

    server = Server(("127.0.0.1", 0), Handler)
    # a short poll keeps shutdown() (once per test) from waiting the default half second
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", state
    finally:
        server.shutdown()
        server.server_close()
