"""`rag-eval annotate [--port N] [--annotator NAME]`: the browser page where people mark the text that
answers each pooled query (rag_eval_pipeline/annotate/), served on 127.0.0.1 only, from the workspace's
data/judging files; judgements are appended to data/judging/judgements.jsonl as they are saved."""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import quote

from ..core.errors import InputError
from ..core.project_files import ProjectFiles

DEFAULT_PORT = 8377


def add_annotate_command(commands: Any) -> None:
    parser = commands.add_parser(
        "annotate",
        help="judge the pooled queries in a browser page on 127.0.0.1 (resumable, several annotators)",
        description="Serve the annotation page on 127.0.0.1 (this machine only): one pooled query at a "
        "time with its passages in their documents; select the text that answers it, or mark it answered "
        "elsewhere, not answerable or unclear. Keyboard-driven (the keys are on the page). Each save is "
        "appended to data/judging/judgements.jsonl; a reload or a restart continues at the annotator's "
        "first unjudged query. Ctrl-C stops the server.",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--annotator", metavar="NAME", help="the name the page starts with (stored as the judge)"
    )


def run_annotate_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..annotate.app import create_app
    from ..annotate.server import bind_loopback, serve, url_of
    from ..core.judging.annotation import check_judge_name
    from ..core.judging.annotation_source import AnnotationSource
    from ..core.judging.store import JudgingStore

    store = JudgingStore(files.path(files.judging_dir))
    try:
        if not 0 <= args.port <= 65535:
            raise InputError(f"--port {args.port} is not a port: give 1 to 65535 (0 picks a free one)")
        annotator = check_judge_name(args.annotator) if args.annotator is not None else None
        source = AnnotationSource(store, files.load_corpus())
        work = source.work()  # a broken judging file or an empty pool: said now, not in the browser
        if not work.tasks:
            raise InputError(
                f"no pooled query to judge in {store.pool_path}: import the queries and pool them first "
                "(`rag-eval queries import FILE`, then `rag-eval pool build`)"
            )
        sock = bind_loopback(args.port)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    url = url_of(sock) + (f"?annotator={quote(annotator)}" if annotator else "")
    for problem in work.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(
        f"Annotation page for {len(work.tasks)} queries of workspace {files.root}: {url} "
        "(served on this machine only; Ctrl-C stops it)",
        flush=True,
    )
    try:
        serve(create_app(source, annotator), sock)
    finally:
        sock.close()
    print(f"Stopped. Judgements are in {store.judgements_path}", flush=True)
    return 0
