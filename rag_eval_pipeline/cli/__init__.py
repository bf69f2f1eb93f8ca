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
  serve [--host H] [--port N] | tokens create NAME --role R|list|revoke NAME      cli/serve.py

Every command is registered in cli/registry.py (its module, handler and summary). cli/runs.py builds on
runner/: evaluate.py (the one evaluation: plan.py plans it, in_process.py runs it here, launch.py submits
it to `dagster dev` by GraphQL) and run_status.py (what the instance knows about an evaluation's runs).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import NoReturn

from ..core.errors import PRECEDENCE, InputError, StorageError
from .registry import COMMANDS, CommandContext


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every registered command's parser, each module adding its own commands' arguments; with
    ``command``, only the parsers of the module that handles it (the others' imports, pandas, DuckDB,
    bs4..., cost about 0.7 CPU s a process)."""
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
    modules = [COMMANDS[command].module] if command else [info.module for info in COMMANDS.values()]
    for module in dict.fromkeys(modules):
        import_module(f"{__name__}.{module}").add_commands(commands)
    return parser


def command_named(argv: Sequence[str]) -> str | None:
    """The registered command ``argv`` names after the global options, None when it names none (help,
    an unknown command, an abbreviated option: the whole parser answers those, as always)."""
    args = list(argv)
    while args and (args[0] == "--workspace" or args[0].startswith("--workspace=")):
        args = args[2:] if args[0] == "--workspace" else args[1:]
    return args[0] if args and args[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 done, 1 a run failed (or there was nothing to show), 2 bad input: a file, key or
    argument the user must fix (argparse's usage errors are 2 as well). Handlers raise InputError for
    bad input; only here does it become "error: ..." and 2."""
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


def entry() -> NoReturn:
    """`rag-eval` as a process (the console script, and `python -m rag_eval_pipeline`): main's exit code
    is the process's. Before the interpreter exits, everything is frozen out of the collections its exit
    runs, which walk every object of a process that imported Dagster and pandas only to free memory
    the exit returns anyway (`rag-eval list` 3.4 -> 2.6 CPU s). What must be closed is closed without
    them: the cache databases at exit (``sqlite_store.close_open_dbs``), the Dagster instance by its
    ``with``. (``main`` itself, called in a long-lived process such as a test's, freezes nothing.)"""
    code = main()
    gc.freeze()
    sys.exit(code)


def _main(argv: Sequence[str] | None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(command_named(given)).parse_args(given)
    # where the user ran the command: paths given on the command line resolve against it, not against
    # the project root the command then changes to
    args.cwd = Path.cwd()
    return exit_code(lambda: run_command(args, CommandContext(args.workspace)))


def exit_code(handle: Callable[[], int]) -> int:
    """The handler's exit code, or "error: <why>" on stderr and 2 for bad input (InputError: the one
    place that maps it), 1 for a storage failure (a full or read-only disk: the path, the OS error, the
    remedy)."""
    try:
        return handle()
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def run_command(args: argparse.Namespace, context: CommandContext) -> int:
    """The registered handler of ``args.command`` (argparse accepts no other)."""
    info = COMMANDS[args.command]
    handler: Callable[[argparse.Namespace, CommandContext], int] = getattr(
        import_module(f"{__name__}.{info.module}"), info.handler
    )
    return handler(args, context)
