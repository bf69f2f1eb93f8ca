"""`rag-eval init DIR --corpus DOCS [--glob PATTERN]` and `rag-eval ui`: a workspace for a team's own
documents (core/project/workspace.py), and the Dagster UI on it (runner/ui.py)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..core.corpus.corpus import describe_skipped_links
from ..core.project.workspace import WORKSPACE_FILE, CreatedWorkspace, init_workspace
from ..runner.ui import run_ui, ui_command
from .registry import CommandContext, add_command


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = add_command(
        commands,
        "init",
        description=f"Creates DIR with {WORKSPACE_FILE} (naming the documents' folder, which stays where "
        "it is), data/*.yaml (the settings, with commented defaults) and dagster.yaml (its own Dagster "
        "instance under DIR/.dagster, telemetry off). Then: cd DIR && rag-eval run.",
    )
    init.add_argument("dir", type=Path, help="the workspace folder (created; must not hold these files yet)")
    init.add_argument("--corpus", type=Path, required=True, help="the folder of documents to evaluate")
    init.add_argument(
        "--glob", help="which files of it, e.g. 'guides/**/*.md' (default: every file of a known format)"
    )
    ui = add_command(commands, "ui")
    ui.add_argument("--port", type=int, default=3000, help="default: 3000")
    ui.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")


def run_init(args: argparse.Namespace) -> int:
    """Before any workspace is located: init makes one."""
    target, corpus = args.cwd / args.dir, args.cwd / args.corpus
    created = init_workspace(target, corpus, args.glob)
    print(describe_created(created))
    return 0


def describe_created(created: CreatedWorkspace) -> str:
    found = ", ".join(f"{n} {name}" for name, n in created.corpus.documents_per_format().items())
    skipped = created.corpus.skipped
    lines = [
        f"workspace {created.root}: {len(created.corpus)} documents in {created.corpus.root} ({found})",
    ]
    if skipped:
        more = f" (+{len(skipped) - 5} more)" if len(skipped) > 5 else ""
        lines.append(f"  skipped, not a format the corpus reads: {', '.join(skipped[:5])}{more}")
    if created.corpus.skipped_links:
        lines.append(f"  {describe_skipped_links(created.corpus.skipped_links)}")
    lines += [
        f"  wrote {', '.join(str(p.relative_to(created.root)) for p in created.written)}",
        "next:",
        f"  cd {shlex.quote(str(created.root))}",
        "  rag-eval run     # questions generated offline (paraphrase), every chunk config x profile",
        "  rag-eval ui      # the Dagster UI on this workspace",
    ]
    return "\n".join(lines)


def run_ui_command(args: argparse.Namespace, root: Path) -> int:
    command = ui_command(root, args.port, args.host)
    print(f"Dagster UI on workspace {root}: {command.url} (Ctrl-C stops it)", flush=True)
    return run_ui(command)


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    if args.command == "init":  # before any workspace is located: init makes one
        return run_init(args)
    return run_ui_command(args, context.root)
