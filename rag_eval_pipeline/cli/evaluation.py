"""An evaluation on the terminal: runner/evaluate.py runs it; this says what is about to run, then the
leaderboard, what failed and why, what did not run and why, and how to resume. `rag-eval run` and
`chunk-configs apply --run` both print through here."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..core.project.project_files import ProjectFiles

if TYPE_CHECKING:
    import pandas as pd

    from ..runner.evaluate import EvaluationOrder, EvaluationStart
    from ..runner.outcome import EvaluationOutcome


class TerminalEvents:
    """What an evaluation says before its runs, printed: warnings on stderr, the plan on stdout."""

    def warning(self, text: str) -> None:
        print(f"warning: {text}", file=sys.stderr)

    def starting(self, start: EvaluationStart) -> None:
        evaluation_id, mode = start.request.evaluation_id, start.request.mode
        if start.resume is None:
            print(
                f"evaluation {evaluation_id} ({mode} mode): {start.plan_summary}, {start.where}", flush=True
            )
            return
        print(
            f"evaluation {evaluation_id} ({mode} mode), resumed: {start.resume.succeeded} of its "
            f"{len(start.resume.planned)} planned runs succeeded before"
            + (f"; {start.plan_summary} to run, {start.where}" if start.plan else ""),
            flush=True,
        )
        if not start.plan:
            print(f"evaluation {evaluation_id}: nothing to resume, every planned run succeeded")


def run_evaluation(files: ProjectFiles, order: EvaluationOrder) -> int:
    """`rag-eval run`: a new evaluation id (or, resuming, the given one's), printed first and last; the
    leaderboard, marked where it is not this evaluation's; what ran, what failed and why, what did not
    run and why. Exit 2 when a run failed on bad input (bad input before any run, or a webserver of
    --launch that cannot take the runs, raise InputError), 1 when a run failed otherwise, 130 on
    Ctrl-C."""
    from ..core.store.warehouse import LEADERBOARD, Warehouse
    from ..runner.evaluate import EvaluationInterrupted, evaluate

    try:
        outcome = evaluate(files, order, TerminalEvents())
    except EvaluationInterrupted as exc:
        where = "the submitted runs go on in Dagster; " if order.launch_url else ""
        print(
            f"\ninterrupted: {where}`rag-eval status {exc.evaluation_id}` shows what ran; "
            f"`rag-eval run --resume {exc.evaluation_id}` runs what did not succeed",
            file=sys.stderr,
        )
        return 130
    if order.resume_id is not None and not outcome.runs:  # nothing left to run: `starting` said so
        return 0
    evaluation_id = outcome.request.evaluation_id
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
    # a row of a board written before rows carried their evaluation has "" (table_upgrades.py): an earlier one
    ids = [str(v) for v in board["evaluation_id"]]
    notes = ["" if note is None or note != note else str(note) for note in board["note"]]  # NaN != NaN
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
