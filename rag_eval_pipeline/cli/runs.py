"""`rag-eval run | status | list | regenerate-questions`: evaluations on the project's Dagster instance.

One `rag-eval run` is one evaluation: a Dagster run per stage and partition (ingestion, chunking per
chunk config, evaluation per chunk config x profile, leaderboard), all tagged with one evaluation id, so
`status` and `list` (and the UI, filtered by the tag) see them as one. The runs execute here, in process
(the default), or are submitted to a running `dagster dev` whose daemon executes them (`--launch`); with
RAG_EVAL_DASK_SCHEDULER set, the runs executed here hand their steps to that Dask cluster's workers
(lib/executor.py, docs/scaling.md).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, get_args

from ..core.errors import InputError
from ..core.evaluation.document_scope import resolve_documents
from ..core.generation.settings import TokenLevelGenerator
from ..core.project.project_files import ProjectFiles
from ..core.settings.monitoring_settings import EVALUATION_MODES
from .output import add_format_argument, render_records
from .registry import CommandContext, add_command

# Where `make ui` (`dagster dev`) listens: what `--launch` submits to by default.
DEFAULT_LAUNCH_URL = "http://127.0.0.1:3000"

# Dagster (and what imports it) loads only when a command runs: building the parser stays light, so
# `rag-eval query` and `--help` start quickly.
if TYPE_CHECKING:
    import dagster as dg


# ---------------------------------------------------------------------------------------------------
# the commands

GENERATORS: tuple[str, ...] = get_args(TokenLevelGenerator)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = add_command(commands, "run")
    add_selection_arguments(run)
    run.add_argument(
        "--launch",
        nargs="?",
        const=DEFAULT_LAUNCH_URL,
        metavar="URL",
        help=f"submit the runs to a running `dagster dev` (default {DEFAULT_LAUNCH_URL}) instead of "
        f"executing them in this process",
    )
    run.add_argument(
        "--force",
        action="store_true",
        help="run every planned run, also those up to date (by default a partition whose documents, "
        "settings, code and models did not change since it last ran is skipped)",
    )
    run.add_argument(
        "--resume",
        metavar="EVALUATION_ID",
        help="run only what did not succeed in that evaluation (killed, failed or never started), with "
        "its own selection and mode, under its id; then the leaderboard",
    )
    status = add_command(commands, "status")
    status.add_argument("ref", help="an evaluation id or a run id, or a unique prefix of either")
    add_format_argument(status)
    listed = add_command(commands, "list")
    listed.add_argument("--limit", type=int, default=10, help="how many (default 10)")
    add_format_argument(listed)
    cancel = add_command(commands, "cancel")
    cancel.add_argument("ref", help="an evaluation id or a run id, or a unique prefix of either")
    cancel.add_argument(
        "--wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the runs to end (default 60; 0: ask and return)",
    )
    add_format_argument(cancel)
    regenerate = add_command(commands, "regenerate-questions")
    regenerate.add_argument(
        "--generator", choices=GENERATORS, help="override token_level.generator of data/generation.yaml"
    )
    which = regenerate.add_mutually_exclusive_group()
    which.add_argument(
        "--document",
        action="append",
        metavar="DOC_ID",
        help="regenerate the questions of this document only (its path in the corpus folder, or a glob "
        "such as 'ops/*.md'), keeping every other document's questions as they are; repeat for more",
    )
    which.add_argument("--all", action="store_true", help="regenerate the questions of every document")
    add_format_argument(regenerate)


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-configs", help="comma-separated chunk config names (default: all)")
    parser.add_argument("--profiles", help="comma-separated retrieval profile names (default: all)")
    parser.add_argument(
        "--mode",
        choices=EVALUATION_MODES,
        help="full (the default) or quick: a seeded sample of the questions",
    )
    parser.add_argument(
        "--sample-size",
        type=int,
        help="quick mode: questions (default: quick.sample_size of data/monitoring.yaml)",
    )


def names(value: str | None) -> list[str] | None:
    return [n.strip() for n in value.split(",") if n.strip()] if value else None


def run_runs_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    if args.command == "run":
        selection = ("chunk_configs", "profiles", "mode", "sample_size")
        chosen = [f"--{n.replace('_', '-')}" for n in selection if getattr(args, n) is not None]
        if args.resume is not None and chosen:
            raise InputError(
                f"--resume runs the evaluation with its own selection and mode: leave out {', '.join(chosen)}"
            )
        from ..runner.evaluate import EvaluationOrder
        from .evaluation import run_evaluation

        order = EvaluationOrder(
            chunk_configs=names(args.chunk_configs),
            profiles=names(args.profiles),
            mode=args.mode or "full",
            sample_size=args.sample_size,
            launch_url=args.launch,
            resume_id=args.resume,
            force=args.force,
            show_progress=sys.stderr.isatty(),
        )
        return run_evaluation(files, order)
    if args.command == "list" and args.limit < 1:
        raise InputError("--limit must be at least 1")
    if args.command == "cancel" and args.wait < 0:
        raise InputError("--wait takes a number of seconds >= 0")
    from ..runner.instance import project_instance
    from ..runner.run_status import (  # only status and list: `run` does not pay for their imports
        evaluation_status,
        fail_orphaned_runs,
        format_evaluations,
        recent_evaluations,
        status_records,
    )

    with project_instance(files.root) as instance:
        if args.command in ("status", "list"):
            for orphan in fail_orphaned_runs(instance):
                where = " ".join(p for p in (orphan.run_id[:8], orphan.job_name, orphan.partition) if p)
                print(f"marked failed: run {where}: {orphan.message}", file=sys.stderr)
        if args.command == "status":
            if args.format == "table":
                print(evaluation_status(instance, args.ref))
            else:
                print(render_records(status_records(instance, args.ref), args.format))
            return 0
        if args.command == "list":
            summaries = recent_evaluations(instance, args.limit)
            if args.format != "table":
                print(render_records([s.record() for s in summaries], args.format))
            else:
                print(format_evaluations(summaries) if summaries else "no runs yet: `rag-eval run` makes one")
            return 0
        if args.command == "cancel":
            return _cancel(instance, args.ref, args.wait, args.format)
        documents = None
        if args.document:  # checked against the corpus before any run; globs become the ids
            corpus_ids = [d.doc_id for d in files.load_corpus()]
            documents = resolve_documents(args.document, corpus_ids, "--document")
        return _regenerate(instance, args.generator, documents, args.format)


def _cancel(instance: dg.DagsterInstance, ref: str, wait_s: float, fmt: str) -> int:
    """`rag-eval cancel REF`: the request (status cancelling), then, while waiting, the end of every run
    it stopped (status cancelled). Exit 1 when a run is still cancelling after ``wait_s``."""
    from ..runner.cancel import request_cancel, wait_until_ended

    request = request_cancel(instance, ref)
    table = fmt == "table"
    what = f"{request.kind} {request.ref}"
    if request.status == "ended before":
        print(
            f"nothing to cancel: every run of {what} had ended", file=sys.stderr if not table else sys.stdout
        )
    else:
        actions = Counter(r.action for r in request.runs)
        summary = ", ".join(f"{n} {action}" for action, n in sorted(actions.items()))
        note = sys.stdout if table else sys.stderr
        print(f"cancel requested for {what} ({request.requested}): {summary}", file=note)
        print(f"status: {request.status}", file=note, flush=True)
        if wait_s > 0 and request.status == "cancelling":
            request = wait_until_ended(instance, request, wait_s)
            print(f"status: {request.status}", file=note)
    records = [
        {
            "run_id": r.run_id,
            "job": r.job_name,
            "partition": r.partition,
            "before": r.before,
            "action": r.action,
            "status": r.status or ("CANCELING" if r.action == "cancelling" else r.before),
        }
        for r in request.runs
    ]
    print(render_records(records, fmt))
    if request.status == "cancelling" and wait_s > 0:
        print(
            f"still cancelling after {wait_s:g} s: the process or run worker executing it has not stopped "
            f"yet; `rag-eval status {request.ref}` shows when it has",
            file=sys.stderr,
        )
        return 1
    return 0


def _regenerate(
    instance: dg.DagsterInstance, generator: str | None, documents: Sequence[str] | None, fmt: str
) -> int:
    from ..core.progress import show_progress_bars
    from ..runner.regenerate import regenerate_questions

    if sys.stderr.isatty():
        show_progress_bars()
    which = f"of {', '.join(documents)} " if documents is not None else ""
    print(
        f"regenerating the synthetic questions {which}(synthetic_questions), eval_questions and "
        "answer_calibration ...",
        file=sys.stderr,
    )
    outcome = regenerate_questions(instance, generator=generator, documents=documents)
    if outcome.failure is None and fmt != "table":
        print(render_records([outcome.record()], fmt))
    else:
        print(outcome.describe(), file=sys.stderr if outcome.failure else sys.stdout)
    if outcome.failure is None:
        return 0
    return 2 if outcome.failure.bad_input else 1


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_runs_command(args, context.files)
