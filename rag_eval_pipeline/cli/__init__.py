"""`rag-eval` (also `python -m rag_eval_pipeline`): the pipeline from a terminal, on the project's Dagster
instance, so every run it makes shows up in the UI too.

  run [--mode quick|full] [--chunk-configs a,b] [--profiles p] [--launch [URL]]   evaluate, print the board
  status REF | list [--limit N] | cancel REF                                     cli/runs.py
  regenerate-questions [--all | --document DOC...] [--generator G]               cli/runs.py
  profiles list|show|create|update|delete|clone                                 cli/configs.py
  chunk-configs list | apply FILE | apply NAME --document DOC | presets [NAME]   cli/configs.py
  questions list|stats|plan [--detect D] | results REF                          cli/questions.py
  queries import FILE [--format F] [--redact-pii|--allow-pii] | list [--limit N] cli/queries.py
  query SQL | compare A B | baseline set|list | history METRIC                   cli/history.py
  leaderboard [--pareto [--cost AXIS]] | dataset import|push|pull                 cli/leaderboard.py, cli/datasets.py
  search                                                                          cli/search.py
  explain QUESTION_ID [--chunk-config C --profile P]                             cli/explain.py
  pool build [--depth N] | judgements status|export [--out FILE]|llm [--limit N] cli/judgements.py, cli/llm_judge.py
  init DIR --corpus DOCS | ui                                                     cli/workspace.py
  annotate [--port N] [--annotator NAME] [--holes [--setup S]]                    cli/annotate.py

cli/runs.py builds on runner/: plan.py (the plan), in_process.py (run here), launch.py (the plan
submitted to `dagster dev` by GraphQL) and run_status.py (what the instance knows about an
evaluation's runs).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import INIT_HINT, PRECEDENCE, InputError, StorageError
from ..core.project_files import ProjectFiles
from ..core.workspace import locate_workspace

RUNS_COMMANDS = frozenset({"run", "status", "list", "cancel", "regenerate-questions"})
CONFIG_COMMANDS = frozenset({"profiles", "chunk-configs"})
JUDGEMENT_COMMANDS = frozenset({"pool", "judgements"})


def build_parser() -> argparse.ArgumentParser:
    from .annotate import add_annotate_command
    from .configs import add_config_commands
    from .datasets import add_dataset_commands
    from .explain import add_explain_command
    from .history import add_history_commands
    from .judgements import add_judgement_commands
    from .leaderboard import add_leaderboard_command
    from .queries import add_queries_commands
    from .questions import add_question_commands
    from .runs import add_runs_commands
    from .search import add_search_command
    from .workspace import add_workspace_commands

    parser = argparse.ArgumentParser(
        prog="rag-eval",
        description=__doc__,
        epilog=f"Where {PRECEDENCE}.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--workspace", metavar="DIR", help="the workspace to use (see below for where it is otherwise)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_workspace_commands(commands)
    add_runs_commands(commands)
    add_leaderboard_command(commands)
    add_search_command(commands)
    add_config_commands(commands)
    add_question_commands(commands)
    add_queries_commands(commands)
    add_dataset_commands(commands)
    add_history_commands(commands)
    add_explain_command(commands)
    add_judgement_commands(commands)
    add_annotate_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 done, 1 a run failed (or there was nothing to show), 2 bad input: a file, key or
    argument the user must fix (argparse's usage errors are 2 as well)."""
    from ..core.redaction import install_log_redaction, install_stream_redaction

    install_stream_redaction()  # what the terminal shows (logs, tracebacks, output) holds no secret
    install_log_redaction()
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader stopped reading (`rag-eval query ... | head`): stop without a traceback, and point
        # stdout at nothing so the interpreter's last flush does not fail again; 1, as the Python docs
        # advise (a truncated output is not a success)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    # where the user ran the command: paths given on the command line resolve against it, not against
    # the project root the command then changes to
    args.cwd = Path.cwd()
    if args.command == "init":
        from .workspace import run_init

        return run_init(args)
    if args.command == "chunk-configs" and args.action == "presets":  # shipped with the package
        from .configs import run_presets_command

        return run_presets_command(args)
    location = locate_workspace(args.workspace)
    root = location.root
    if not root.is_dir():
        print(f"error: the {location.describe()} does not exist: {INIT_HINT}", file=sys.stderr)
        return 2
    os.chdir(root)  # dagster.yaml's relative storage paths are relative to the project root
    try:
        return run_command(args, ProjectFiles.in_project(root))
    except InputError as exc:  # the commands catch their own; this is the net under all of them
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StorageError as exc:  # a full or read-only disk: the path, the OS error, the remedy
        print(f"error: {exc}", file=sys.stderr)
        return 1


def run_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    if args.command in RUNS_COMMANDS:
        from .runs import run_runs_command

        return run_runs_command(args, files)
    if args.command in CONFIG_COMMANDS:
        from .configs import run_config_command

        return run_config_command(args, files)
    if args.command in ("questions", "results"):
        from .questions import run_question_command

        return run_question_command(args, files)
    if args.command == "queries":
        from .queries import run_queries_command

        return run_queries_command(args, files)
    if args.command == "ui":
        from .workspace import run_ui_command

        return run_ui_command(args, files.root)
    if args.command == "search":
        from .search import run_search_command

        return run_search_command(args, files)
    if args.command == "annotate":
        from .annotate import run_annotate_command

        return run_annotate_command(args, files)
    if args.command == "dataset":
        from .datasets import run_dataset_command

        return run_dataset_command(args, files)
    if args.command in JUDGEMENT_COMMANDS:
        from .judgements import run_judgement_command

        return run_judgement_command(args, files)
    from ..core.warehouse import Warehouse
    from .history import HISTORY_COMMANDS, run_history_command

    warehouse = Warehouse.in_project(files.root)
    if args.command in HISTORY_COMMANDS:
        return run_history_command(args, warehouse.base_dir, files.path(files.monitoring_file))
    if args.command == "explain":
        from .explain import run_explain_command

        return run_explain_command(args, warehouse)
    if args.command == "leaderboard":
        from .leaderboard import run_leaderboard_command

        return run_leaderboard_command(args, warehouse)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse only accepts the ones above
