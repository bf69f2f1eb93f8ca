"""A local HTTP server that speaks the parts of the OpenAI protocol the tests need, with scripted faults.

The real `openai` client talks to it; nothing leaves the machine. Routes: ``/embeddings`` and
``/chat/completions``. Faults are served in order before real replies: ``(status, headers)`` answers
with that HTTP status, ``Slow(seconds)`` answers the next request only after that long, past the client's timeout, and then
with a 504 that consumes no scripted reply (it used to take one a later request was meant to get),
``RawReply(status, content_type, body)`` answers those bytes as they are (a truncated JSON body, a
gateway's HTML page, an empty body), ``EchoKey()`` answers 401 quoting the request's bearer key, as
some gateways do, and ``EchoKeyInReply()`` answers 200 with a completion that quotes the
``Authorization`` header and names the key as its model (a debugging proxy's echo: what a reply holds
reaches the caches). ``script.fault_for(body)``, when set, picks a fault per request (after the queue).
Chat replies come from ``script.chat_contents`` (popped in order) and then from ``script.responder``.
``scripted_client`` builds the project's LLMClient on it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.llm.accounting import Price, PriceTable
from rag_eval_pipeline.core.llm.cache import ResponseCache
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline.core.llm.retry import RetryPolicy


@dataclass(frozen=True)
class Slow:
    seconds: float


@dataclass(frozen=True)
class RawReply:
    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class EchoKey:
    status: int = 401


@dataclass(frozen=True)
class EchoKeyInReply:
    pass


# Replies a misbehaving gateway sends with status 200.
TRUNCATED_JSON = RawReply(200, "application/json", b'{"id": "chatcmpl-1", "object": "chat.completion", "choi')
HTML_PAGE = RawReply(
    200, "text/html; charset=utf-8", b"<html><head><title>502</title></head><body>Bad gateway</body></html>"
)
EMPTY_BODY = RawReply(200, "application/json", b"")
BROKEN_REPLIES = (TRUNCATED_JSON, HTML_PAGE, EMPTY_BODY)

Fault = tuple[int, dict[str, str]] | Slow | RawReply | EchoKey | EchoKeyInReply


def echo_responder(body: dict[str, Any]) -> str:
    return "echo: " + str(body["messages"][-1]["content"])[:40]


class ScriptedOpenAI:
    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.chat_contents: list[str] = []
        self.responder: Callable[[dict[str, Any]], str] = echo_responder
        self.fault_for: Callable[[dict[str, Any]], Fault | None] | None = None
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.dimension = 8
        self._lock = threading.Lock()

    def embedding(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255.0 for b in digest[: self.dimension]]

    def next_fault(self, body: dict[str, Any]) -> Fault | None:
        with self._lock:
            if self.faults:
                return self.faults.pop(0)
        return self.fault_for(body) if self.fault_for is not None else None

    def chat_content(self, body: dict[str, Any]) -> str:
        with self._lock:
            if self.chat_contents:
                return self.chat_contents.pop(0)
        return self.responder(body)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]


@contextmanager
def openai_server() -> Iterator[tuple[str, ScriptedOpenAI]]:
    script = ScriptedOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with script._lock:
                script.requests.append({"path": self.path, "body": body})
                script.auth_headers.append(self.headers.get("Authorization", ""))
            fault = script.next_fault(body)
            if isinstance(fault, Slow):
                time.sleep(fault.seconds)  # the client has given up: what is scripted is for its retry
                self._reply(504, {"error": {"message": "the reply came too late", "type": "timeout"}})
                return
            elif isinstance(fault, RawReply):
                self._send(fault.status, fault.body, fault.content_type)
                return
            elif isinstance(fault, EchoKey):
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                message = f"Incorrect API key provided: {key}. You can find your API key in your account."
                self._reply(fault.status, {"error": {"message": message, "type": "invalid_request_error"}})
                return
            elif isinstance(fault, EchoKeyInReply):
                header = self.headers.get("Authorization", "")
                self._completion(
                    body, f"Your request carried Authorization: {header}", header.removeprefix("Bearer ")
                )
                return
            elif fault is not None:
                status, headers = fault
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
            if self.path.endswith("/chat/completions"):
                try:
                    content = script.chat_content(body)
                except Exception as exc:  # a broken script must fail its test, not hang it
                    self._reply(500, {"error": {"message": f"script failed: {exc!r}"}})
                    return
                self._completion(body, content, body["model"])
                return
            self._reply(404, {"error": {"message": f"no route {self.path}"}})

        def _completion(self, body: dict[str, Any], content: str, model: str) -> None:
            prompt_tokens = sum(len(str(m["content"]).split()) for m in body["messages"])
            completion_tokens = len(content.split())
            self._reply(
                200,
                {
                    "id": f"chatcmpl-{len(script.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                },
            )

        def _reply(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json", headers)

        def _send(
            self, status: int, raw: bytes, content_type: str, headers: dict[str, str] | None = None
        ) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(raw)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", script
    finally:
        server.shutdown()
        server.server_close()


def scripted_client(
    url: str,
    tmp_path: Path | None = None,
    *,
    model: str = "gpt-4o-mini",
    max_attempts: int | None = 2,
    prices: Mapping[str, Price] | None = None,
    **kwargs: Any,
) -> LLMClient:
    """An LLMClient on the real `openai` SDK pointed at this server, so tests cover the whole path.

    Responses are cached in ``tmp_path/responses.sqlite`` when it is given; retries wait 10 ms so a
    scripted fault costs no time (``max_attempts=None`` keeps the client's default policy);
    ``prices`` override entries of the default price table. Other keywords go to LLMClient.
    """
    return LLMClient(
        OpenAIChatModel(model, api_key="sk-test", base_url=url, timeout=5),
        cache=ResponseCache(tmp_path / "responses.sqlite") if tmp_path is not None else None,
        retry=RetryPolicy(max_attempts=max_attempts, base_delay_s=0.01) if max_attempts is not None else None,
        prices=PriceTable().with_overrides(prices) if prices else None,
        **kwargs,
    )
