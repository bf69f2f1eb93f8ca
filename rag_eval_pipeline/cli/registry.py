"""Every `rag-eval` command, listed here and nowhere else (model: pip's commands/__init__.py): its name,
the cli/ module that adds its arguments (`add_commands`) and handles it, and the one-line summary
`--help` shows. `main` (cli/__init__.py) parses with the parser the modules build from it and calls the
handler; test_layout.py checks no other place names a command."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import INIT_HINT, InputError
from ..core.project.project_files import ProjectFiles
from ..core.project.workspace import locate_workspace

if TYPE_CHECKING:
    from ..core.store.warehouse import Warehouse


@dataclass(frozen=True)
class CommandInfo:
    module: str  # under rag_eval_pipeline.cli, imported only when its command runs or the parser is built
    summary: str  # the `--help` line
    handler: str = "handle"  # handle(args: argparse.Namespace, context: CommandContext) -> int


COMMANDS: dict[str, CommandInfo] = {
    "init": CommandInfo(
        "workspace",
        "create a workspace for your documents: settings with commented defaults, its own instance",
    ),
    "ui": CommandInfo(
        "workspace",
        "open the Dagster UI (`dagster dev`) on the workspace: its instance, data and sensors",
    ),
    "run": CommandInfo(
        "runs",
        "evaluate every partition (one Dagster run each), print the leaderboard",
    ),
    "status": CommandInfo(
        "runs",
        "the runs of an evaluation (or one run): status, trigger, profiles, questions, metrics",
    ),
    "list": CommandInfo(
        "runs",
        "the recent evaluations",
    ),
    "cancel": CommandInfo(
        "runs",
        "cancel an evaluation (every run not ended) or one run: status cancelling, then cancelled",
    ),
    "regenerate-questions": CommandInfo(
        "runs",
        "re-materialize synthetic_questions and eval_questions in process: for every document (--all, the default) or for some documents, keeping the other documents' questions",
    ),
    "leaderboard": CommandInfo(
        "leaderboard",
        "print the current leaderboard (--pareto: its Pareto front of quality against a cost)",
    ),
    "search": CommandInfo(
        "search",
        "race the chunk configs and profiles of data/search.yaml; a killed search resumes",
    ),
    "profiles": CommandInfo(
        "configs",
        "the retrieval profiles: list, show, create, update, delete or clone one",
    ),
    "chunk-configs": CommandInfo(
        "configs",
        "the chunk configs: list, apply a file or apply one to documents, presets",
    ),
    "questions": CommandInfo(
        "questions",
        "the evaluation questions: list them, or count them",
    ),
    "results": CommandInfo(
        "questions",
        "the per-question results of an evaluation (or a run), filtered and paged",
    ),
    "queries": CommandInfo(
        "queries",
        "import the queries users asked (logs, LangSmith runs, OpenTelemetry spans); list them",
    ),
    "dataset": CommandInfo(
        "datasets",
        "import, push or pull evaluation datasets",
    ),
    "query": CommandInfo(
        "history",
        "run DuckDB SQL over the history (tables: retrieval_metrics, ..._summary, leaderboard, ...)",
    ),
    "compare": CommandInfo(
        "history",
        "per-metric differences B - A with paired bootstrap intervals and a verdict",
    ),
    "baseline": CommandInfo(
        "history",
        "pin or list the baselines the regression checks use",
    ),
    "history": CommandInfo(
        "history",
        "a metric's mean and interval per partition over time",
    ),
    "explain": CommandInfo(
        "explain",
        "why a question's reference text was missed: each stage's ranks and scores, the oracles",
    ),
    "pool": CommandInfo(
        "judgements",
        "pool the passages to judge for the imported queries",
    ),
    "judgements": CommandInfo(
        "judgements",
        "how far the judging is, the judgements written as golden questions, or an LLM's judgements",
    ),
    "annotate": CommandInfo(
        "annotate",
        "judge the pooled queries in a browser page on 127.0.0.1 (resumable, several annotators)",
    ),
    "serve": CommandInfo(
        "serve",
        "serve the tech spec's HTTP API (/api/v1/eval) on 127.0.0.1, with bearer tokens and roles",
    ),
    "tokens": CommandInfo(
        "serve",
        "the HTTP API's bearer tokens: create one (printed once), list or revoke them",
    ),
}


def add_command(commands: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The subparser of the registered command ``name``, its help from the registry."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=COMMANDS[name].summary, **kwargs)
    return parser


@dataclass(frozen=True)
class CommandContext:
    """What a handler may need of the workspace, found on first use: `init` and `chunk-configs presets`
    need none, so they work where there is no workspace yet."""

    workspace: str | None  # --workspace, else where core/project/workspace.py looks

    @cached_property
    def root(self) -> Path:
        """The workspace's folder, made the working directory: dagster.yaml's relative storage paths are
        relative to it. InputError when it does not exist."""
        location = locate_workspace(self.workspace)
        if not location.root.is_dir():
            raise InputError(f"the {location.describe()} does not exist: {INIT_HINT}")
        os.chdir(location.root)
        return location.root

    @cached_property
    def files(self) -> ProjectFiles:
        return ProjectFiles.in_project(self.root)

    @cached_property
    def warehouse(self) -> Warehouse:
        from ..core.store.warehouse import Warehouse

        return Warehouse.in_project(self.root)
