"""`rag-eval annotate [--port N] [--annotator NAME] [--holes [--setup SETUP]... [--threshold SHARE]]`: the
browser page where people mark the text that answers each pooled query (rag_eval_pipeline/annotate/),
served on 127.0.0.1 only, from the workspace's data/judging files; judgements are appended to
data/judging/judgements.jsonl as they are saved. Queries with text nobody read come first.

``--holes``: only the pooled text the setups `rag-eval judgements status` flags retrieved and nobody
read, worst setup first (runner/judging.py's ``holes_to_judge``, core/judging/hole_focus.py)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..core.errors import InputError
from ..core.judging.judged_at_k import UNJUDGED_THRESHOLD
from ..core.project.project_files import ProjectFiles
from .judgements import _progress, _share
from .registry import CommandContext, add_command

if TYPE_CHECKING:
    from ..core.judging.hole_focus import HoleFocus

DEFAULT_PORT = 8377


def add_commands(commands: Any) -> None:
    parser = add_command(
        commands,
        "annotate",
        description="Serve the annotation page on 127.0.0.1 (this machine only): one pooled query at a "
        "time with its passages in their documents; select the text that answers it, or mark it answered "
        "elsewhere, not answerable or unclear. Keyboard-driven (the keys are on the page). Each save is "
        "appended to data/judging/judgements.jsonl; a reload or a restart continues at the annotator's "
        "first unjudged query. Queries with text nobody has read come first, then those only missing your "
        "second opinion. --holes offers only the text the setups `rag-eval judgements status` flags "
        "retrieved and nobody read, worst setup first. Ctrl-C stops the server.",
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
    parser.add_argument(
        "--holes",
        action="store_true",
        help="offer only the passages the setups flagged by `rag-eval judgements status` retrieved and nobody "
        "read, worst setup first (retrieves every imported query with every setup first, as status does)",
    )
    parser.add_argument(
        "--setup",
        action="append",
        default=[],
        metavar="'CONFIG x PROFILE'",
        help="with --holes: only this setup (repeatable), as status names it",
    )
    parser.add_argument(
        "--threshold",
        type=_share,
        default=UNJUDGED_THRESHOLD,
        metavar="SHARE",
        help=f"with --holes: a setup is flagged above this unjudged share (default {UNJUDGED_THRESHOLD})",
    )


def run_annotate_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..annotate.app import create_app
    from ..annotate.server import bind_loopback, serve, url_of
    from ..core.judging.annotation import check_judge_name
    from ..core.judging.annotation_source import AnnotationSource
    from ..core.judging.store import JudgingStore

    store = JudgingStore(files.path(files.judging_dir))
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port {args.port} is not a port: give 1 to 65535 (0 picks a free one)")
    if (args.setup or args.threshold != UNJUDGED_THRESHOLD) and not args.holes:
        raise InputError("--setup and --threshold choose the holes to judge: add --holes")
    annotator = check_judge_name(args.annotator) if args.annotator is not None else None
    focus = _holes(args, files) if args.holes else None
    if focus is not None and not focus.queries:
        return 0
    source = AnnotationSource(store, files.load_corpus(), focus)
    work = source.work()  # a broken judging file or an empty pool: said now, not in the browser
    if not work.tasks:
        raise InputError(
            f"no pooled query to judge in {store.pool_path}: import the queries and pool them first "
            "(`rag-eval queries import FILE`, then `rag-eval pool build`)"
        )
    sock = bind_loopback(args.port)
    url = url_of(sock) + (f"?annotator={quote(annotator)}" if annotator else "")
    for problem in work.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if work.focus:
        print(work.focus)
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


def _holes(args: argparse.Namespace, files: ProjectFiles) -> HoleFocus:
    """The focus of --holes, said as it is found; an InputError when the flagged text is not pooled.
    An empty focus (nothing flagged) has been explained when this returns."""
    from ..runner.judging import holes_to_judge

    print(
        "finding the setups with unjudged results: retrieving the imported queries with every setup "
        "(as `rag-eval judgements status` does)...",
        file=sys.stderr,
        flush=True,
    )
    found = holes_to_judge(files, args.threshold, args.setup, _progress())
    focus, status = found.focus, found.status
    if not status.n_judged:
        print(
            "no query is judged yet, so no setup can be flagged (judged@k is measured on judged queries): "
            "judge the pooled queries first with `rag-eval annotate`"
        )
        return focus
    if not focus.holes:
        limit = f"more than {args.threshold:.0%} of its top k unjudged"
        if args.setup:
            print(
                f"nothing to fill: {', '.join(args.setup)} not flagged ({limit}); a lower --threshold "
                "offers what is unjudged in it anyway"
            )
        else:
            print(
                f"nothing to fill: no setup is flagged ({limit}); `rag-eval annotate` offers every pooled query"
            )
        return focus
    advice = focus.pool_advice()
    if not focus.queries:
        setups = ", ".join(h.judged.setup for h in focus.missing)
        raise InputError(
            f"the text {setups} retrieved and nobody read is not in the pool ({files.path(files.judging_dir)}"
            f"/pool.jsonl): pool it first, `{advice}`, then run `rag-eval annotate --holes` again"
        )
    for hole in focus.missing:
        print(
            f"warning: part of what {hole.judged.setup} retrieved and nobody read is not in the pool: "
            f"`{advice}` pools it",
            file=sys.stderr,
        )
    return focus


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_annotate_command(args, context.files)
