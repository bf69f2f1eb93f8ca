"""Serving the annotation page on 127.0.0.1 only (and the HTTP API, `rag-eval serve`), with uvicorn: in the foreground for `rag-eval
annotate`, or in a thread for tests. The socket is bound before the server starts, so a port in use is
a clear error before anything is printed, and port 0 picks a free port whose URL is then known."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette

from ..core.errors import InputError

LOOPBACK = "127.0.0.1"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def bind_loopback(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: a free port)."""
    return bind_socket(LOOPBACK, port)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (an IPv4 address; `rag-eval serve --host`)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as exc:
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(
            f"cannot listen on {host}:{port} ({reason}): choose another port with --port "
            "(--port 0 picks a free one) or another --host"
        ) from exc
    sock.listen(64)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}/"


def _server(app: Starlette) -> uvicorn.Server:
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))


def serve(app: Starlette, sock: socket.socket) -> None:
    """Serve until Ctrl-C or SIGTERM, then return: uvicorn stops gracefully (a save in flight lands)
    and re-raises the signal to the handlers that were there before it; these record it, so the
    command ends with its own message and exit code rather than a KeyboardInterrupt traceback."""
    stopped: list[int] = []
    previous = {sig: signal.signal(sig, lambda number, _: stopped.append(number)) for sig in STOP_SIGNALS}
    try:
        _server(app).run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def serving_in_thread(app: Starlette, port: int = 0) -> Iterator[str]:
    """The page served from a background thread while the block runs; yields its URL."""
    sock = bind_loopback(port)
    server = _server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the annotation server did not start")
            time.sleep(0.01)
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
