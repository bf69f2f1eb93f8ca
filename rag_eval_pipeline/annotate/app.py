"""The annotation page's server: one static page (static/, plain JavaScript, nothing from elsewhere) and a
small JSON API over the workspace's judging files. Every rule (the queue, progress, resuming, checking a
save) lives in core/judging/annotation.py; this module only turns it into HTTP.

  GET  /                          the page
  GET  /api/state?annotator=NAME  the queue, NAME's progress and where NAME resumes
  GET  /api/task/{i}?annotator=N  query i with its passages in context, and N's saved judgement of it
  POST /api/judgements            save a judgement (400 with {"error": ...} when refused)
  GET  /api/agreement             agreement between the judges of doubly-judged queries

Served on the loopback interface only. Requests naming another host are refused (a web page elsewhere
cannot reach the server by DNS rebinding), a save must be a JSON request from the page's own origin (no
cross-site form can post one), and the Content-Security-Policy lets the page load only its own files.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..core.errors import InputError
from ..core.judging.annotation import (
    AnnotationError,
    AnnotationTask,
    AnnotationWork,
    ShownPassage,
    check_judge_name,
    first_unjudged,
    human_judgements_by,
    own_judgements,
    progress,
    unread_passages,
)
from ..core.judging.annotation_source import AnnotationSource
from ..core.judging.store import judgement_to_json
from ..core.judging.types import Judgement

STATIC = Path(__file__).parent / "static"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; form-action 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(source: AnnotationSource, default_annotator: str | None = None) -> Starlette:
    def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    def state(request: Request) -> Response:
        work = source.work()
        name = request.query_params.get("annotator", "").strip()
        return JSONResponse(_state_json(work, source.judgements(), name, default_annotator))

    def task(request: Request) -> Response:
        work = source.work()
        index = int(request.path_params["index"])
        if not 0 <= index < len(work.tasks):
            return _error(404, f"there is no query {index + 1}: the queue holds {len(work.tasks)}")
        name = request.query_params.get("annotator", "").strip()
        return JSONResponse(_task_json(work, index, source.judgements(), name))

    async def save(request: Request) -> Response:
        refused = _cross_site(request)
        if refused:
            return _error(403, refused)
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the request body is not JSON: reload the page")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object: reload the page")
        from starlette.concurrency import run_in_threadpool  # the save reads and writes files

        saved = await run_in_threadpool(source.save, body)
        work = source.work()
        answer = _state_json(work, source.judgements(), saved.judge, default_annotator)
        answer["saved"] = judgement_to_json(saved)
        return JSONResponse(answer)

    def agreement(request: Request) -> Response:
        return JSONResponse({"rows": [dataclasses.asdict(row) for row in source.agreement()]})

    async def refused(request: Request, exc: Exception) -> Response:
        return _error(400, str(exc))

    async def unreadable(request: Request, exc: Exception) -> Response:
        # a judging file that does not read (DatasetError names the file and line) or a full disk
        return _error(500, str(exc))

    routes = [
        Route("/", page),
        Route("/api/state", state),
        Route("/api/task/{index:int}", task),
        Route("/api/judgements", save, methods=["POST"]),
        Route("/api/agreement", agreement),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_HOSTS)),
        ],
        exception_handlers={AnnotationError: refused, InputError: unreadable, OSError: unreadable},
    )


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _cross_site(request: Request) -> str | None:
    """Why a save is refused as not coming from the page (None: it does)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return "a save must be sent by the annotation page as JSON"
    origin = request.headers.get("origin")
    if origin is not None and origin.rstrip("/") != f"{request.url.scheme}://{request.url.netloc}":
        return f"a save from {origin} is refused: only the annotation page itself may save"
    return None


def _state_json(
    work: AnnotationWork, judgements: list[Judgement], name: str, default_annotator: str | None
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "default_annotator": default_annotator or "",
        "focus": work.focus,
        "total": len(work.tasks),
        "problems": list(work.problems),
        "annotator": None,
        "progress": None,
        "resume": None,
        "queries": [
            {"query_id": t.query.query_id, "text": t.query.text, "judged": False} for t in work.tasks
        ],
    }
    if not name:
        return answer
    judge = check_judge_name(name)
    own = own_judgements(judgements, judge)
    done = progress(work, judgements, judge)
    answer.update(
        annotator=judge,
        progress={"judged": done.judged, "total": done.total, "text": done.describe()},
        resume=first_unjudged(work, judgements, judge),
    )
    for query, task in zip(answer["queries"], work.tasks, strict=True):
        query["judged"] = not unread_passages(task, own.get(task.query.query_id, []))
    return answer


def _task_json(work: AnnotationWork, index: int, judgements: list[Judgement], name: str) -> dict[str, Any]:
    task: AnnotationTask = work.tasks[index]
    query_id = task.query.query_id
    judges = sorted({j.judge for j in judgements if j.query_id == query_id and j.kind == "human"})
    judge = check_judge_name(name) if name else None
    mine = human_judgements_by(judgements, judge).get(query_id) if judge else None
    if mine is not None and not _read_any(mine, task):
        mine = None  # their judgement of other passages of the query (`--holes` shows only unread ones)
    # passages new since this person judged the query (a new chunk config or run added them to the pool)
    unread = unread_passages(task, own_judgements(judgements, judge).get(query_id, [])) if judge else ()
    return {
        "index": index,
        "total": len(work.tasks),
        "query": {
            "query_id": query_id,
            "text": task.query.text,
            "count": task.query.count,
            "variants": list(task.query.variants),
        },
        "passages": [_passage_json(p) for p in task.passages],
        "excerpts": [
            {
                "doc_id": e.doc_id,
                "start": e.start,
                "end": e.end,
                "document_characters": e.document_characters,
                "pieces": [{"text": piece.text, "passage": piece.passage} for piece in e.pieces],
            }
            for e in task.excerpts
        ],
        "reason": task.reason,
        "mine": _mine_json(mine, task) if mine else None,
        "new_since_judged": list(unread) if mine else [],
        "judged_by": judges,
    }


def _read_any(judgement: Judgement, task: AnnotationTask) -> bool:
    return any(r.overlaps(p.span) for r in (*judgement.read, *judgement.spans) for p in task.passages)


def _mine_json(mine: Judgement, task: AnnotationTask) -> dict[str, Any]:
    """The annotator's judgement as the page starts from it: only its spans inside the passages shown
    (a save may hold no other; the spans elsewhere stand, judge_views layers the judgements)."""
    found = judgement_to_json(mine)
    found["spans"] = [
        s
        for s, span in zip(found["spans"], mine.spans, strict=True)
        if any(p.doc_id == span.doc_id and p.start <= span.start and span.end <= p.end for p in task.passages)
    ]
    return found


def _passage_json(passage: ShownPassage) -> dict[str, Any]:
    return {
        "doc_id": passage.doc_id,
        "start": passage.start,
        "end": passage.end,
        "text": passage.text,
        "before": passage.before,
        "after": passage.after,
        "context_start": passage.context_start,
        "context_end": passage.context_end,
        "document_characters": passage.document_characters,
        "document_sha256": passage.document_sha256,
        "found_by": list(passage.found_by),
    }
