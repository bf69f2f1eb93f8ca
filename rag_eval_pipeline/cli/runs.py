"""`rag-eval run | status | list | regenerate-questions`: evaluations on the project's Dagster instance.

One `rag-eval run` is one evaluation: a Dagster run per stage and partition (ingestion, chunking per
chunk config, evaluation per chunk config x profile, leaderboard), all tagged with one evaluation id, so
`status` and `list` (and the UI, filtered by the tag) see them as one. The runs execute here, in process
(the default), or are submitted to a running `dagster dev` whose daemon executes them (`--launch`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, get_args

from ..core.document_scope import resolve_documents
from ..core.errors import InputError
from ..core.generation.settings import TokenLevelGenerator
from ..core.monitoring_settings import EVALUATION_MODES, EvaluationMode, MonitoringSettings
from ..core.project_files import ProjectFiles
from .output import add_format_argument, render_records

# Where `make ui` (`dagster dev`) listens: what `--launch` submits to by default.
DEFAULT_LAUNCH_URL = "http://127.0.0.1:3000"

# Dagster (and what imports it) loads only when a command runs: building the parser stays light, so
# `rag-eval query` and `--help` start quickly.
if TYPE_CHECKING:
    import dagster as dg
    import pandas as pd

    from ..runner.outcome import EvaluationOutcome
    from ..runner.plan import PlannedRun


def execute_evaluation(
    files: ProjectFiles,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    mode: EvaluationMode = "full",
    sample_size: int | None = None,
    launch_url: str | None = None,
    resume_id: str | None = None,
    force: bool = False,
) -> int:
    """`rag-eval run`: a new evaluation id (or, resuming, the given one's), printed first and last; the
    leaderboard, marked where it is not this evaluation's; what ran, what failed and why, what did not
    run and why. Exit 2 when a run failed on bad input (or the input is bad before any run, or the
    webserver of --launch cannot take the runs), 1 when a run failed otherwise."""
    from ..core.evaluation_ids import new_evaluation_id
    from ..core.progress import show_progress_bars
    from ..core.warehouse import LEADERBOARD, Warehouse
    from ..runner.in_process import execute_plan, sync_configs
    from ..runner.instance import project_instance
    from ..runner.launch import DagsterWebserver, LaunchError, launch_main_job
    from ..runner.plan import EvaluationRequest, plan_main_job
    from ..runner.resume import plan_resume
    from ..runner.up_to_date import UpToDate

    if sample_size is not None and (mode != "quick" or sample_size < 1):
        print("error: --sample-size takes a number >= 1 and applies to --mode quick only", file=sys.stderr)
        return 2
    show = sys.stderr.isatty()
    evaluation_id = resume_id or new_evaluation_id()
    try:
        configs = files.load_configs()
        with project_instance(files.root) as instance:
            evaluated_before = False
            if resume_id is not None:
                resume = plan_resume(instance, resume_id, configs)
                request, plan, evaluated_before = resume.request, list(resume.to_run), resume.evaluated_before
            else:
                plan = plan_main_job(configs, chunk_configs, profiles)
                request = EvaluationRequest.of_plan(plan, evaluation_id, mode, sample_size)
            if request.mode == "quick" or any(r.stage == "leaderboard" for r in plan):
                # a broken file stops here, not in every partition, nor in the leaderboard at the end
                files.load_settings(MonitoringSettings)
            # before any run: a large corpus is announced with its estimate, a broken one stops here
            chunking = [r.chunk_config for r in plan if r.chunk_config and r.stage == "chunking"]
            ingestion = any(r.stage == "ingestion" for r in plan)
            for warning in files.workload(chunking, ingestion).warnings() if chunking or ingestion else ():
                print(f"warning: {warning}", file=sys.stderr)
            if ingestion:  # a golden set asked for and missing (or a broken generation.yaml) stops here
                files.question_sources()
            where = f"submitted to {DagsterWebserver(launch_url).url}" if launch_url else "in process"
            if resume_id is not None:
                print(
                    f"evaluation {evaluation_id} ({request.mode} mode), resumed: {resume.succeeded} of its "
                    f"{len(resume.planned)} planned runs succeeded before"
                    + (f"; {_plan_summary(plan)} to run, {where}" if plan else ""),
                    flush=True,
                )
                if not plan:
                    print(f"evaluation {evaluation_id}: nothing to resume, every planned run succeeded")
                    return 0
            else:
                print(f"evaluation {evaluation_id} ({mode} mode): {_plan_summary(plan)}, {where}", flush=True)
            if launch_url:
                outcome = launch_main_job(
                    launch_url,
                    configs,
                    plan,
                    request,
                    show_progress=show,
                    evaluated_before=evaluated_before,
                    up_to_date=None if force else UpToDate(instance),
                    instance=instance,
                )
            else:
                if show:
                    show_progress_bars()
                sync_configs(instance, configs)
                outcome = execute_plan(
                    instance,
                    request,
                    plan,
                    show_progress=show,
                    evaluated_before=evaluated_before,
                    force=force,
                    profiles=request.profiles_of(configs),
                )
    except (InputError, LaunchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        where = "the submitted runs go on in Dagster; " if launch_url else ""
        print(
            f"\ninterrupted: {where}`rag-eval status {evaluation_id}` shows what ran; "
            f"`rag-eval run --resume {evaluation_id}` runs what did not succeed",
            file=sys.stderr,
        )
        return 130
    print_leaderboard(Warehouse.in_project(files.root).read_current(LEADERBOARD), outcome)
    for failed in outcome.of_state("failed"):
        print(f"FAILED: {failed.describe()}", file=sys.stderr)
    for line in outcome.not_run_lines():
        print(f"NOT RUN: {line}", file=sys.stderr)
    if outcome.cancelled:
        stopped = [r.planned.label for r in outcome.of_state("cancelled")]
        print(f"CANCELLED: evaluation {evaluation_id} was cancelled ({', '.join(stopped)})", file=sys.stderr)
    if outcome.exit_code:
        print(
            ("" if outcome.cancelled else "after fixing the cause, ")
            + f"`rag-eval run --resume {evaluation_id}` runs only the runs that did not succeed",
            file=sys.stderr,
        )
    print(f"evaluation {evaluation_id}: {outcome.counts()}; details: rag-eval status {evaluation_id}")
    return outcome.exit_code


def print_leaderboard(board: pd.DataFrame | None, outcome: EvaluationOutcome) -> None:
    """The current leaderboard, said plainly when it is not this evaluation's (its leaderboard run did
    not run or failed, or another run wrote the current one), each row from an earlier evaluation noted
    (its partition was not in this one, or failed in it)."""
    from ..core.leaderboard.render_text import format_leaderboard

    evaluation_id = outcome.request.evaluation_id
    if board is None:
        print(f"no leaderboard yet: evaluation {evaluation_id} did not build one", file=sys.stderr)
        return
    built_by = str(board["run_id"].iloc[0]) if "run_id" in board.columns and len(board) else ""
    own_run = outcome.leaderboard_run_id
    leaderboard_run = next((r for r in outcome.runs if r.planned.stage == "leaderboard"), None)
    current = leaderboard_run is not None and leaderboard_run.state == "up to date"
    if current:
        print(
            f"up to date: nothing the leaderboard reads changed since run {built_by[:8] or '?'} built it; "
            "`rag-eval run --force` evaluates again"
        )
    elif own_run is None or own_run != built_by:
        if own_run is not None:
            why = f"its leaderboard run {own_run[:8]} wrote elsewhere or was overtaken"
        elif leaderboard_run is None or leaderboard_run.state == "not run":
            cause = leaderboard_run.blocked_by if leaderboard_run is not None else ""
            why = f"its leaderboard did not run ({cause})" if cause else "its leaderboard did not run"
        else:
            why = "its leaderboard run failed"
        created = (
            str(board["created_at"].iloc[0])[:19] if "created_at" in board.columns and len(board) else "?"
        )
        print(
            f"NOT THE LEADERBOARD OF EVALUATION {evaluation_id}: {why}. Below is the current leaderboard, "
            f"built earlier by run {built_by[:8] or '?'} ({created})"
        )
    # boards written before rows carried their evaluation count as earlier evaluations'
    ids = [str(v) for v in board["evaluation_id"]] if "evaluation_id" in board.columns else [""] * len(board)
    notes = [
        "" if note is None or note != note else str(note)  # NaN != NaN
        for note in (board["note"] if "note" in board.columns else [None] * len(board))
    ]
    earlier = [i for i, row_evaluation in enumerate(ids) if row_evaluation != evaluation_id]
    for i in earlier:
        mark = f"from {ids[i]}" if ids[i] else "from an earlier evaluation"
        notes[i] = f"{notes[i]}; {mark}" if notes[i] else mark
    print(format_leaderboard(board.assign(note=notes) if earlier else board))
    if len(earlier) and current:
        print(
            f"note 'from <evaluation>': the evaluation that last computed each row ({evaluation_id} skipped it)"
        )
    elif len(earlier):
        print(
            f"note 'from <evaluation>': {len(earlier)} row(s) hold metrics of an earlier evaluation, not of "
            f"{evaluation_id} (it did not evaluate that partition, found it up to date, or its run failed)"
        )


def _plan_summary(plan: Sequence[PlannedRun]) -> str:
    from ..runner.plan import STAGES

    counts = Counter(r.stage for r in plan)
    return " + ".join(f"{counts[s]} {s}" for s in STAGES if counts[s]) + " runs"


# ---------------------------------------------------------------------------------------------------
# the commands

GENERATORS: tuple[str, ...] = get_args(TokenLevelGenerator)


def add_runs_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run", help="evaluate every partition (one Dagster run each), print the leaderboard"
    )
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
    status = commands.add_parser(
        "status", help="the runs of an evaluation (or one run): status, trigger, profiles, questions, metrics"
    )
    status.add_argument("ref", help="an evaluation id or a run id, or a unique prefix of either")
    add_format_argument(status)
    listed = commands.add_parser("list", help="the recent evaluations")
    listed.add_argument("--limit", type=int, default=10, help="how many (default 10)")
    add_format_argument(listed)
    cancel = commands.add_parser(
        "cancel",
        help="cancel an evaluation (every run not ended) or one run: status cancelling, then cancelled",
    )
    cancel.add_argument("ref", help="an evaluation id or a run id, or a unique prefix of either")
    cancel.add_argument(
        "--wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the runs to end (default 60; 0: ask and return)",
    )
    add_format_argument(cancel)
    regenerate = commands.add_parser(
        "regenerate-questions",
        help="re-materialize synthetic_questions and eval_questions in process: for every document "
        "(--all, the default) or for some documents, keeping the other documents' questions",
    )
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
            print(
                f"error: --resume runs the evaluation with its own selection and mode: leave out "
                f"{', '.join(chosen)}",
                file=sys.stderr,
            )
            return 2
        return execute_evaluation(
            files,
            chunk_configs=names(args.chunk_configs),
            profiles=names(args.profiles),
            mode=args.mode or "full",
            sample_size=args.sample_size,
            launch_url=args.launch,
            resume_id=args.resume,
            force=args.force,
        )
    if args.command == "list" and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    if args.command == "cancel" and args.wait < 0:
        print("error: --wait takes a number of seconds >= 0", file=sys.stderr)
        return 2
    from ..runner.instance import project_instance
    from ..runner.run_status import (  # only status and list: `run` does not pay for their imports
        evaluation_status,
        fail_orphaned_runs,
        format_evaluations,
        recent_evaluations,
        status_records,
    )

    try:
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
                    print(
                        format_evaluations(summaries)
                        if summaries
                        else "no runs yet: `rag-eval run` makes one"
                    )
                return 0
            if args.command == "cancel":
                return _cancel(instance, args.ref, args.wait, args.format)
            documents = None
            if args.document:  # checked against the corpus before any run; globs become the ids
                corpus_ids = [d.doc_id for d in files.load_corpus()]
                documents = resolve_documents(args.document, corpus_ids, "--document")
            return _regenerate(instance, args.generator, documents, args.format)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


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
