"""How the runs of an evaluation ended, and which planned run may not start because one it needs failed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import dagster as dg

from .plan import EvaluationRequest, PlannedRun
from .run_failures import RunFailure

SUCCEEDED = frozenset({dg.DagsterRunStatus.SUCCESS})
# ended without succeeding (what `run --resume` runs again)
FAILED = frozenset({dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED})
# A run in one of these states executes no step any more.
ENDED_STATUSES = SUCCEEDED | FAILED

# "up to date": skipped, as nothing it reads or runs changed since it last ran (lib/freshness.py);
# "cancelled": stopped by `rag-eval cancel` (runner/cancel.py), or not started because of it
RunState = Literal["succeeded", "failed", "cancelled", "not run", "up to date"]
DONE: frozenset[RunState] = frozenset({"succeeded", "up to date"})
# why a planned run was not started when its evaluation was cancelled
CANCELLED_BEFORE_START = "the evaluation was cancelled"


@dataclass(frozen=True)
class RunOutcome:
    planned: PlannedRun
    state: RunState
    run_id: str | None = None
    failure: RunFailure | None = None
    blocked_by: str = ""  # why a run that did not run did not start: what failed before it

    def describe(self) -> str:
        return f"{self.planned.label} (run {self.run_id}): {self.failure}"


@dataclass(frozen=True)
class EvaluationOutcome:
    """What one evaluation (or its resumption) planned, ran, and how each run ended."""

    request: EvaluationRequest
    runs: tuple[RunOutcome, ...]

    def of_state(self, state: RunState) -> list[RunOutcome]:
        return [r for r in self.runs if r.state == state]

    @property
    def failures(self) -> list[str]:
        return [r.describe() for r in self.of_state("failed")]

    @property
    def bad_input(self) -> bool:
        return any(r.failure is not None and r.failure.bad_input for r in self.of_state("failed"))

    @property
    def exit_code(self) -> int:
        """2 when a run failed on bad input (the user must fix a file), 1 when one failed otherwise or
        the evaluation was cancelled."""
        return 2 if self.bad_input else 1 if self.of_state("failed") or self.of_state("cancelled") else 0

    @property
    def cancelled(self) -> bool:
        return bool(self.of_state("cancelled"))

    @property
    def leaderboard_run_id(self) -> str | None:
        return next((r.run_id for r in self.of_state("succeeded") if r.planned.stage == "leaderboard"), None)

    def counts(self) -> str:
        cancelled = self.of_state("cancelled")
        unstarted = [r for r in cancelled if r.blocked_by]  # recorded CANCELED, never started
        up_to_date = len(self.of_state("up to date"))
        ran = len(self.runs) - len(self.of_state("not run")) - up_to_date - len(unstarted)
        stopped = len(cancelled) - len(unstarted)
        return (
            f"{len(self.runs)} runs planned, {ran} ran ({len(self.of_state('succeeded'))} succeeded, "
            f"{len(self.of_state('failed'))} failed"
            + (f", {stopped} cancelled" if stopped else "")
            + "), "
            + (f"{up_to_date} up to date (skipped; --force re-runs them), " if up_to_date else "")
            + f"{len(self.of_state('not run'))} not run"
            + (f", {len(unstarted)} cancelled before they started" if unstarted else "")
        )

    def not_run_lines(self) -> list[str]:
        """One line per cause: "ingestion failed, so 4 runs did not start: ..."."""
        by_cause: dict[str, list[str]] = {}
        for run in self.of_state("not run"):
            by_cause.setdefault(run.blocked_by, []).append(run.planned.label)
        return [
            f"{cause}, so {len(labels)} run{'s' if len(labels) > 1 else ''} did not start: {', '.join(labels)}"
            for cause, labels in by_cause.items()
        ]


def blocked_reason(planned: PlannedRun, done: Sequence[RunOutcome], evaluated_before: bool = False) -> str:
    """Why ``planned`` must not start after ``done`` ("" when it may): each stage reads what the one
    before it wrote, and after a failure that would be an older version (stale chunks, no questions).
    The leaderboard needs one evaluation run of this evaluation to have succeeded (``evaluated_before``:
    in the part of it that ran before a resume)."""
    if planned.stage == "ingestion":
        return ""
    ingestion = next((r for r in done if r.planned.stage == "ingestion" and r.state not in DONE), None)
    if ingestion is not None:
        return f"ingestion {_ended(ingestion)}"
    chunking = next(
        (
            r
            for r in done
            if planned.stage == "evaluation"
            and r.planned.stage == "chunking"
            and r.planned.chunk_config == planned.chunk_config
            and r.state not in DONE
        ),
        None,
    )
    if chunking is not None:
        return f"chunking {planned.chunk_config} {_ended(chunking)}"
    evaluations = [r for r in done if r.planned.stage == "evaluation"]
    if (
        planned.stage == "leaderboard"
        and evaluations
        and not evaluated_before
        and all(r.state not in DONE for r in evaluations)
    ):
        return "no evaluation run succeeded"
    return ""


def _ended(run: RunOutcome) -> str:
    return "was cancelled" if run.state == "cancelled" else "failed"
