"""`rag-eval questions list|stats|plan` and `rag-eval results REF`: the evaluation questions, how many an
evaluation needs (``plan``: core/evaluation/question_plan.py, before any is generated) and the per-question results
of an evaluation, filtered and paged (the tech spec's ``GET /eval/questions``, ``GET
/eval/questions/stats`` and ``GET /eval/runs/{id}/results``).

The questions are the ``eval_questions`` table in the warehouse (what the last ingestion made the
evaluation use); the results are the ``retrieval_metrics`` history rows the evaluation's runs wrote,
found through the runs Dagster records (core/questions/question_catalog.py, core/evaluation/run_results.py).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from ..core.errors import ConfigError
from ..core.evaluation.run_results import results_page
from ..core.leaderboard.power import DEFAULT_DETECT
from ..core.project.project_files import ProjectFiles
from ..core.questions.question_catalog import (
    CatalogQuestion,
    catalog,
    check_question_filters,
    filter_questions,
    question_stats,
)
from ..core.store.warehouse import Warehouse
from .output import add_format_argument, render, render_records
from .registry import CommandContext, add_command

NO_QUESTIONS = "no evaluation questions yet: `rag-eval run` (or `rag-eval regenerate-questions`) makes them"


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    questions = add_command(commands, "questions")
    actions = questions.add_subparsers(dest="action", required=True)
    listed = actions.add_parser(
        "list", help="the questions the evaluation uses, filtered by type and document"
    )
    listed.add_argument(
        "--type", action="append", default=[], metavar="TYPE", help="only this question type; repeat for more"
    )
    listed.add_argument(
        "--document",
        action="append",
        default=[],
        metavar="DOC_ID",
        help="only questions about this document (its id, or a glob such as 'ops/*.md'); repeat for more",
    )
    add_paging_arguments(listed, default_limit=100)
    add_format_argument(listed)
    stats = actions.add_parser("stats", help="how many questions: in total, by type, by document")
    add_format_argument(stats)
    plan = actions.add_parser(
        "plan",
        help="how many questions the evaluation needs to detect a difference, from a pilot of the cheapest "
        "setups, before any question is generated",
        description="Generates pilot questions offline, evaluates the cheapest chunk config with the profiles "
        "that call no LLM or reranker on them, and from the spread of their per-question differences says "
        "how many questions detect --detect at 80 %% power, and what the evaluation's questions detect now. "
        "Writes only embeddings, to the embedding cache a run would fill (core/evaluation/question_plan.py).",
    )
    plan.add_argument(
        "--detect",
        type=float,
        default=DEFAULT_DETECT,
        metavar="DIFFERENCE",
        help=f"the difference of the objective's mean to detect (default {DEFAULT_DETECT})",
    )
    plan.add_argument(
        "--pilot",
        type=int,
        metavar="N",
        help="pilot questions to ask for (default: token_level.n_questions of data/generation.yaml)",
    )

    results = add_command(commands, "results")
    results.add_argument("ref", help="an evaluation id or a run id, or a unique prefix of either")
    results.add_argument("--question-type", action="append", default=[], metavar="TYPE")
    results.add_argument("--profile", action="append", default=[], metavar="NAME")
    results.add_argument("--chunk-config", action="append", default=[], metavar="NAME")
    add_paging_arguments(results, default_limit=50)
    add_format_argument(results)


def add_paging_arguments(parser: argparse.ArgumentParser, default_limit: int) -> None:
    parser.add_argument(
        "--limit", type=int, default=default_limit, help=f"rows per page (default {default_limit})"
    )
    parser.add_argument("--offset", type=int, default=0, help="rows to skip (default 0)")


def run_question_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    if getattr(args, "limit", 1) < 1 or getattr(args, "offset", 0) < 0:
        raise ConfigError(f"--limit must be >= 1 and --offset >= 0, got {args.limit} and {args.offset}")
    if args.command == "results":
        return _results(args, files)
    if args.action == "plan":
        return _plan(args, files)
    questions = _catalog(files)
    if questions is None:
        print(NO_QUESTIONS, file=sys.stderr)
        return 1
    if args.action == "stats":
        stats = question_stats(questions)
        print(render_records(stats.records(), args.format, ["group", "key", "questions"]))
        return 0
    check_question_filters(questions, args.type, args.document)
    matching = filter_questions(questions, args.type, args.document)
    page = matching[args.offset : args.offset + args.limit]
    columns = ["question_id", "type", "documents", "status", "generator", "question"]
    print(render_records([q.record() for q in page], args.format, columns))
    print(_paging(len(page), len(matching), args.offset), file=sys.stderr)
    return 0


def _plan(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..core.evaluation.question_plan import check_detect
    from ..core.progress import TqdmProgress, no_progress
    from ..runner.question_plan import plan_for_project

    check_detect(args.detect)  # before any file is read
    if args.pilot is not None and args.pilot < 2:
        raise ConfigError(f"--pilot {args.pilot}: a pilot needs at least 2 questions to measure a spread")
    progress = TqdmProgress() if sys.stderr.isatty() else no_progress
    plan = plan_for_project(files, args.detect, args.pilot, progress)
    print("\n".join(plan.lines()))
    print(
        "written: only embeddings, to the embedding cache a run reuses; no table, index or run",
        file=sys.stderr,
    )
    return 0 if plan.pilot.differences is not None else 1


def _catalog(files: ProjectFiles) -> list[CatalogQuestion] | None:
    table = Warehouse.in_project(files.root).read_current("eval_questions")
    return None if table is None else catalog(table)


def _paging(shown: int, total: int, offset: int) -> str:
    if not total:
        return "0 questions"
    if not shown:
        return f"no row at offset {offset}: {total} questions match"
    last = offset + shown
    more = f"; --offset {last} for the next page" if last < total else ""
    return f"questions {offset + 1}-{last} of {total}{more}"


def _results(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..runner.instance import project_instance
    from ..runner.run_status import find_runs, question_rows_of_runs

    with project_instance(files.root) as instance:
        selection = find_runs(instance, args.ref)
    warehouse = Warehouse.in_project(files.root)
    rows = question_rows_of_runs(warehouse.base_dir, selection.runs)
    what = f"{selection.kind} {selection.ref}"
    if rows.empty:
        print(f"{what} wrote no per-question results (it evaluated no partition)", file=sys.stderr)
        return 1
    questions = _catalog(files) or []
    page = results_page(
        rows,
        question_types=args.question_type,
        profiles=args.profile,
        chunk_configs=args.chunk_config,
        limit=args.limit,
        offset=args.offset,
        types_of={q.question_id: q.question_type for q in questions},
        what=what,
    )
    print(render(_rounded(page.rows) if args.format == "table" else page.rows, args.format))
    print(page.describe(), file=sys.stderr)
    return 0


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """Metrics to 4 decimals in the table (CSV and JSON keep every digit)."""
    numeric = frame.select_dtypes("float").columns
    return frame.assign(**{c: frame[c].round(4) for c in numeric})


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_question_command(args, context.files)
