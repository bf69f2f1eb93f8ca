"""A local HTTP server that speaks the parts of the OpenAI protocol the tests need, with scripted faults.

The real `openai` client talks to it; nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedOpenAI:
    def __init__(self) -> None:
        self.faults: list[tuple[int, dict[str, str]]] = []  # (status, headers) served before real replies
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.dimension = 8

    def embedding(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255.0 for b in digest[: self.dimension]]


@contextmanager
def openai_server() -> Iterator[tuple[str, ScriptedOpenAI]]:
    script = ScriptedOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append({"path": self.path, "body": body})
            script.auth_headers.append(self.headers.get("Authorization", ""))
            if script.faults:
                status, headers = script.faults.pop(0)
                self._reply(status, {"error": {"message": "scripted fault", "type": "server_error"}}, headers)
                return
            if self.path.endswith("/embeddings"):
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {"object": "embedding", "index": i, "embedding": script.embedding(t)}
                    for i, t in reversed(list(enumerate(inputs)))  # out of order on purpose
                ]
                usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
                self._reply(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})
                return
            self._reply(404, {"error": {"message": f"no route {self.path}"}})

        def _reply(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", script
    finally:
        server.shutdown()
        server.server_close()
