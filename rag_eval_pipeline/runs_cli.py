"""`rag-eval run | status | list | regenerate-questions`: evaluations on the project's Dagster instance.

One `rag-eval run` is one evaluation: a Dagster run per stage and partition (ingestion, chunking per
chunk config, evaluation per chunk config x profile, leaderboard), all tagged with one evaluation id, so
`status` and `list` (and the UI, filtered by the tag) see them as one. The runs execute here, in process
(the default), or are submitted to a running `dagster dev` whose daemon executes them (`--launch`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import yaml

from .core.errors import ConfigError, InputError
from .core.generation.settings import TokenLevelGenerator, load_generation_settings
from .core.monitoring import EVALUATION_MODES, EvaluationMode
from .project import DEFAULT_LAUNCH_URL

# Dagster (and what imports it) loads only when a command runs: building the parser stays light, so
# `rag-eval query` and `--help` start quickly.
if TYPE_CHECKING:
    import dagster as dg

    from .main_job import PlannedRun
    from .resources import ProjectResource


def execute_evaluation(
    root: Path,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    mode: EvaluationMode = "full",
    sample_size: int | None = None,
    launch_url: str | None = None,
) -> int:
    """`rag-eval run`: a new evaluation id, printed first and last; the leaderboard; exit 1 when a run
    failed, 2 on bad input or when the webserver of --launch cannot take the runs."""
    from .assets.common import PROGRESS_BAR_ENV
    from .evaluation_runs import new_evaluation_id
    from .main_job import (
        format_leaderboard,
        plan_main_job,
        project_instance,
        read_current_leaderboard,
        run_main_job,
    )
    from .resources import ProjectResource
    from .webserver import DagsterWebserver, LaunchError, launch_main_job

    if sample_size is not None and (mode != "quick" or sample_size < 1):
        print("error: --sample-size takes a number >= 1 and applies to --mode quick only", file=sys.stderr)
        return 2
    show = sys.stderr.isatty()
    evaluation_id = new_evaluation_id()
    try:
        project = ProjectResource(root=str(root))
        configs = project.load_configs()
        plan = plan_main_job(configs, chunk_configs, profiles)
        if mode == "quick":
            project.load_monitoring_settings()  # a broken file stops here, not in every partition
        where = f"submitted to {DagsterWebserver(launch_url).url}" if launch_url else "in process"
        print(f"evaluation {evaluation_id} ({mode} mode): {_plan_summary(plan)}, {where}", flush=True)
        if launch_url:
            outcome = launch_main_job(
                launch_url, configs, plan, evaluation_id, mode, sample_size, show_progress=show
            )
            failures, n_runs = list(outcome.failures), len(outcome.run_ids)
            board = read_current_leaderboard(None)
            if board is not None and outcome.leaderboard_run_id not in set(board["run_id"].astype(str)):
                board = None  # the webserver's warehouse is not this project's
        else:
            if show:
                os.environ[PROGRESS_BAR_ENV] = "1"
            with project_instance(root) as instance:
                board, failures = run_main_job(
                    instance,
                    chunk_configs=chunk_configs,
                    profiles=profiles,
                    show_progress=show,
                    mode=mode,
                    evaluation_id=evaluation_id,
                    sample_size=sample_size,
                )
            n_runs = len(plan)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LaunchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if launch_url:
            print(
                f"\ninterrupted: the submitted runs go on in Dagster; `rag-eval status {evaluation_id}` "
                f"follows them",
                file=sys.stderr,
            )
        return 130
    if board is not None:
        print(format_leaderboard(board))
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print(
        f"evaluation {evaluation_id}: {n_runs} runs, {len(failures)} failed; "
        f"details: rag-eval status {evaluation_id}"
    )
    return 1 if failures else 0


def _plan_summary(plan: Sequence[PlannedRun]) -> str:
    from .main_job import STAGES

    counts = Counter(r.stage for r in plan)
    return " + ".join(f"{counts[s]} {s}" for s in STAGES if counts[s]) + " runs"


# ---------------------------------------------------------------------------------------------------
# regenerate-questions

GENERATORS: tuple[str, ...] = get_args(TokenLevelGenerator)


@dataclass(frozen=True)
class RegeneratedQuestions:
    run_id: str
    failure: str | None
    generator: str = ""
    accepted: int = 0
    rejected: int = 0
    rejected_by_reason: Mapping[str, int] = field(default_factory=dict)
    evaluation_questions: int | None = None
    evaluate_on: str = ""

    def describe(self) -> str:
        if self.failure is not None:
            return f"regenerating the questions failed (run {self.run_id}): {self.failure}"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.rejected_by_reason.items()))
        lines = [
            f"synthetic_questions ({self.generator}): {self.accepted} accepted, {self.rejected} rejected"
            + (f" ({reasons})" if reasons else ""),
            f"eval_questions: {self.evaluation_questions} questions from the {self.evaluate_on} set",
        ]
        if self.evaluate_on == "golden":
            lines.append(
                "note: evaluate_on is golden in data/generation.yaml, so the evaluation does not use the "
                "synthetic questions; set it to synthetic or both to use them"
            )
        lines.append(f"run {self.run_id}")
        return "\n".join(lines)


def regenerate_questions(
    instance: dg.DagsterInstance,
    resources: Mapping[str, object] | None = None,
    generator: str | None = None,
) -> RegeneratedQuestions:
    """Re-materialize the ingestion job (synthetic_questions, eval_questions, answer_calibration) in
    process; ``generator`` overrides token_level.generator of data/generation.yaml for this run only."""
    from .definitions import build_definitions
    from .main_job import QUIET_LOGS, STAGE_JOBS, failure_message_of
    from .resources import ProjectResource

    base = dict(build_definitions(resources).resources or {})
    project = base["project"]
    assert isinstance(project, ProjectResource)
    with tempfile.TemporaryDirectory(prefix="rag-eval-generation-") as scratch:
        if generator is not None:
            base["project"] = _with_generator(project, generator, Path(scratch))
        job = build_definitions(base).resolve_job_def(STAGE_JOBS["ingestion"])
        result = job.execute_in_process(
            instance=instance,
            run_config=QUIET_LOGS,
            tags={"rag_eval/command": "regenerate-questions"},
            raise_on_error=False,
        )
    if not result.success:
        return RegeneratedQuestions(result.run_id, failure_message_of(result))
    synthetic = _metadata(result, "synthetic_questions")
    evaluated = _metadata(result, "eval_questions")
    return RegeneratedQuestions(
        run_id=result.run_id,
        failure=None,
        generator=str(synthetic["generator"]),
        accepted=int(synthetic["n_questions"]),
        rejected=int(synthetic["n_rejected"]),
        rejected_by_reason={str(k): int(v) for k, v in dict(synthetic["rejected_by_reason"]).items()},
        evaluation_questions=int(evaluated["n_questions"]),
        evaluate_on=str(evaluated["evaluate_on"]),
    )


def _with_generator(project: ProjectResource, generator: str, scratch: Path) -> ProjectResource:
    """The project with a copy of its generation settings whose token-level generator is replaced."""
    if generator not in GENERATORS:
        raise ConfigError(f"--generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
    source = project.path(project.generation_file)
    load_generation_settings(source)  # a broken file fails here, under its own name
    document = (yaml.safe_load(source.read_text(encoding="utf-8")) if source.exists() else None) or {}
    token_level = dict(document.get("token_level") or {})
    token_level["generator"] = generator
    document["token_level"] = token_level
    copy = scratch / "generation.yaml"
    copy.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return type(project)(**{**project.model_dump(), "generation_file": str(copy)})


def _metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    materializations = result.asset_materializations_for_node(asset)
    if not materializations:
        return {}
    return {k: getattr(v, "value", v) for k, v in materializations[-1].metadata.items()}


# ---------------------------------------------------------------------------------------------------
# the commands


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
    status = commands.add_parser("status", help="the runs of an evaluation (or one run) and its metrics")
    status.add_argument("ref", help="an evaluation id or a run id, or a unique prefix of either")
    listed = commands.add_parser("list", help="the recent evaluations")
    listed.add_argument("--limit", type=int, default=10, help="how many (default 10)")
    regenerate = commands.add_parser(
        "regenerate-questions", help="re-materialize synthetic_questions and eval_questions in process"
    )
    regenerate.add_argument(
        "--generator", choices=GENERATORS, help="override token_level.generator of data/generation.yaml"
    )


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-configs", help="comma-separated chunk config names (default: all)")
    parser.add_argument("--profiles", help="comma-separated retrieval profile names (default: all)")
    parser.add_argument(
        "--mode", choices=EVALUATION_MODES, default="full", help="quick: a seeded sample of the questions"
    )
    parser.add_argument(
        "--sample-size",
        type=int,
        help="quick mode: questions (default: quick.sample_size of data/monitoring.yaml)",
    )


def names(value: str | None) -> list[str] | None:
    return [n.strip() for n in value.split(",") if n.strip()] if value else None


def run_runs_command(args: argparse.Namespace, root: Path) -> int:
    from .main_job import project_instance
    from .run_status import evaluation_status, format_evaluations, recent_evaluations

    if args.command == "run":
        return execute_evaluation(
            root,
            chunk_configs=names(args.chunk_configs),
            profiles=names(args.profiles),
            mode=args.mode,
            sample_size=args.sample_size,
            launch_url=args.launch,
        )
    if args.command == "list" and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        with project_instance(root) as instance:
            if args.command == "status":
                print(evaluation_status(instance, args.ref))
                return 0
            if args.command == "list":
                summaries = recent_evaluations(instance, args.limit)
                print(format_evaluations(summaries) if summaries else "no runs yet: `rag-eval run` makes one")
                return 0
            return _regenerate(instance, args.generator)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _regenerate(instance: dg.DagsterInstance, generator: str | None) -> int:
    from .assets.common import PROGRESS_BAR_ENV

    if sys.stderr.isatty():
        os.environ[PROGRESS_BAR_ENV] = "1"
    print("regenerating synthetic_questions, eval_questions and answer_calibration ...", file=sys.stderr)
    outcome = regenerate_questions(instance, generator=generator)
    print(outcome.describe(), file=sys.stderr if outcome.failure else sys.stdout)
    return 1 if outcome.failure else 0
