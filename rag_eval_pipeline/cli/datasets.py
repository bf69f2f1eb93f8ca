"""`rag-eval dataset import|push|pull`: bring a dataset in from a JSONL/CSV file or LangSmith, or send
one to LangSmith. Every import is validated against the project's corpus before it is written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.dataset_import import import_dataset
from ..core.datasets import ChunkLevelDataset, TokenLevelDataset, write_jsonl
from ..core.errors import InputError
from ..core.langsmith.datasets import download_dataset, upload_dataset
from ..core.langsmith.errors import LangSmithError
from ..core.langsmith.settings import LangSmithSettings
from ..core.paths import child_path
from ..core.project_files import ProjectFiles


def add_dataset_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dataset = commands.add_parser("dataset", help="import, push or pull evaluation datasets")
    actions = dataset.add_subparsers(dest="action", required=True)
    imported = actions.add_parser(
        "import", help="validate a JSONL or CSV dataset (e.g. question,references,corpus_id) and write JSONL"
    )
    imported.add_argument("file", type=Path)
    imported.add_argument("--out", type=Path, help="JSONL to write (default: data/datasets/<name>.jsonl)")
    push = actions.add_parser("push", help="upload a JSONL or CSV dataset to LangSmith (idempotent)")
    push.add_argument("file", type=Path)
    push.add_argument("--name", help="LangSmith dataset name (default: the file name)")
    pull = actions.add_parser("pull", help="download a LangSmith dataset, validate it, write JSONL")
    pull.add_argument("name")
    pull.add_argument("--out", type=Path, help="JSONL to write (default: data/datasets/<name>.jsonl)")


def run_dataset_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    try:
        corpus = files.load_corpus()
        if args.action == "import":
            dataset = import_dataset(args.file, corpus)
            return _write(dataset, args.out or files.path(files.datasets_dir) / f"{args.file.stem}.jsonl")
        settings = LangSmithSettings.from_env()
        if settings is None:
            print("error: set LANGSMITH_API_KEY (and LANGSMITH_ENDPOINT if self-hosted)", file=sys.stderr)
            return 2
        if args.action == "push":
            dataset = import_dataset(args.file, corpus)
            name = args.name or args.file.stem
            report = upload_dataset(settings.client(), dataset, name)
            print(
                f"{name}: {report.created} created, {report.updated} updated, {report.unchanged} unchanged"
                + (f"\n{report.url}" if report.url else "")
            )
            return 0
        # a LangSmith name may hold '/' or be '..': the default file must stay in data/datasets
        out = args.out or child_path(files.path(files.datasets_dir), f"{args.name}.jsonl")
        return _write(download_dataset(settings.client(), args.name, corpus), out)
    except (InputError, LangSmithError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _write(dataset: TokenLevelDataset | ChunkLevelDataset, out: Path) -> int:
    write_jsonl(dataset, out)
    print(f"{len(dataset)} {dataset.evaluation_type} questions written to {out}")
    return 0
