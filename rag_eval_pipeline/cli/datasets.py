"""`rag-eval dataset import|push|pull`: bring a dataset in from a JSONL/CSV file or LangSmith, or send
one to LangSmith. Every import is validated against the project's corpus before it is written.

A relative FILE or --out is relative to the directory `rag-eval` was run in (``args.cwd``), not to the
project root the command works in; every message shows the absolute path. After an import, the exact
next step: the command that evaluates on the questions, or that they are the golden set already.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..core.errors import InputError
from ..core.generation.settings import GenerationSettings
from ..core.langsmith.datasets import download_dataset, upload_dataset
from ..core.langsmith.errors import LangSmithError
from ..core.langsmith.settings import LangSmithSettings
from ..core.project.project_files import GOLDEN_DATASET_ENV, ProjectFiles
from ..core.questions.dataset_import import ImportedDataset, read_dataset
from ..core.questions.datasets import ChunkLevelDataset, TokenLevelDataset, write_jsonl
from ..core.store.paths import child_path
from .registry import CommandContext, add_command

DESCRIPTION = """\
Bring evaluation questions in, or send them to LangSmith.

  rag-eval dataset import FILE [--only-present] [--trust-offsets] [--out JSONL]
      a JSONL dataset (token- or chunk-level) or a CSV (question,references,corpus_id as in the public
      chunking benchmark, or question,doc_id,start,end,text[,question_id]), every span checked
      against the corpus; or questions with the quoted passage that answers them and no offsets
      (CSV question,excerpt[,doc_id][,question_id][,reference_answer], or JSONL lines
      {"question": ..., "excerpt": ..., "doc_id": ...}), each excerpt located in its document (or the
      corpus) and required to occur there exactly once; written as JSONL; then it prints how to
      evaluate on it. Offsets without text are refused unless --trust-offsets.
  rag-eval dataset push FILE [--name NAME] [--trust-offsets]   upload to LangSmith (idempotent)
  rag-eval dataset pull NAME [--out JSONL]      download from LangSmith, validate, write JSONL

FILE and --out are relative to the current directory."""

# How many absent documents `import --only-present` names before counting the rest.
MAX_LISTED = 10


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dataset = add_command(
        commands, "dataset", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    actions = dataset.add_subparsers(dest="action", required=True, metavar="{import,push,pull}")
    imported = actions.add_parser(
        "import",
        help="validate a JSONL or CSV dataset against the corpus and write it as JSONL",
        description="Validate a JSONL or CSV dataset against the project's corpus and write it as JSONL; "
        "then print how to evaluate on it.",
    )
    imported.add_argument(
        "file", type=Path, help="the dataset (.jsonl or .csv), relative to the current directory"
    )
    imported.add_argument(
        "--only-present",
        action="store_true",
        help="keep only the questions whose documents are in the corpus (e.g. a benchmark over several "
        "corpora, of which the project holds some); without it such questions are an error",
    )
    add_trust_offsets_argument(imported)
    imported.add_argument(
        "--out",
        type=Path,
        metavar="JSONL",
        help="the file to write, relative to the current directory (default: data/datasets/<FILE "
        "name>.jsonl in the project); the project's golden set (data/datasets/golden_token_level.jsonl "
        "in it) makes them the questions `rag-eval run` evaluates on",
    )
    push = actions.add_parser(
        "push",
        help="upload a JSONL or CSV dataset to LangSmith (idempotent)",
        description="Validate a dataset and upload it to LangSmith (examples matched by question id).",
    )
    push.add_argument(
        "file", type=Path, help="the dataset (.jsonl or .csv), relative to the current directory"
    )
    push.add_argument("--name", help="LangSmith dataset name (default: the file name)")
    add_trust_offsets_argument(push)
    pull = actions.add_parser(
        "pull",
        help="download a LangSmith dataset, validate it, write JSONL",
        description="Download a LangSmith dataset, validate it against the corpus, write it as JSONL.",
    )
    pull.add_argument("name", help="the LangSmith dataset")
    pull.add_argument(
        "--out",
        type=Path,
        metavar="JSONL",
        help="the file to write, relative to the current directory (default: data/datasets/<name>.jsonl "
        "in the project)",
    )


def add_trust_offsets_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-offsets",
        action="store_true",
        help="accept span CSV rows that give start and end but no text: nothing can check that such "
        "offsets point at the passage meant, so without this flag they are refused",
    )


def run_dataset_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    cwd: Path = getattr(args, "cwd", None) or Path.cwd()
    try:
        corpus = files.load_corpus()
        if args.action == "import":
            source = absolute(args.file, cwd)
            out = (
                absolute(args.out, cwd)
                if args.out
                else files.path(files.datasets_dir) / f"{source.stem}.jsonl"
            )
            imported = read_dataset(
                source, corpus, only_present=args.only_present, trust_offsets=args.trust_offsets
            )
            for line in dropped_lines(imported, corpus.root):
                print(line)
            if imported.trusted_spans:
                print(
                    f"{imported.trusted_spans} span(s) taken on trust from their offsets (--trust-offsets): "
                    "no text to check them against"
                )
            _write(imported.dataset, out, source)
            flags = [
                *(["--only-present"] if args.only_present else []),
                *(["--trust-offsets"] if args.trust_offsets else []),
            ]
            for line in next_steps(imported.dataset, source, out, files, flags):
                print(line)
            return 0
        settings = LangSmithSettings.from_env()
        if settings is None:
            raise InputError("set LANGSMITH_API_KEY (and LANGSMITH_ENDPOINT if self-hosted)")
        if args.action == "push":
            source = absolute(args.file, cwd)
            dataset = read_dataset(source, corpus, trust_offsets=args.trust_offsets).dataset
            name = args.name or source.stem
            report = upload_dataset(settings.client(), dataset, name)
            print(
                f"{name} (from {source}): {report.created} created, {report.updated} updated, "
                f"{report.unchanged} unchanged" + (f"\n{report.url}" if report.url else "")
            )
            return 0
        # a LangSmith name may hold '/' or be '..': the default file must stay in data/datasets
        out = (
            absolute(args.out, cwd)
            if args.out
            else child_path(files.path(files.datasets_dir), f"{args.name}.jsonl")
        )
        _write(download_dataset(settings.client(), args.name, corpus), out, f"LangSmith dataset {args.name}")
        return 0
    except LangSmithError as exc:
        raise InputError(str(exc)) from exc


def absolute(path: Path, cwd: Path) -> Path:
    """``path`` as the user meant it: relative to the directory `rag-eval` was run in."""
    return (cwd / path.expanduser()).resolve()


def dropped_lines(imported: ImportedDataset, corpus_root: str) -> list[str]:
    """What `--only-present` left out: the counts, and the absent documents (the first ``MAX_LISTED``)."""
    if not imported.dropped:
        return []
    kept, dropped = len(imported.dataset), len(imported.dropped)
    documents = imported.absent_documents()
    listed = [f"  {doc} ({n} question{'s' if n > 1 else ''})" for doc, n in documents[:MAX_LISTED]]
    if len(documents) > MAX_LISTED:
        listed.append(f"  and {len(documents) - MAX_LISTED} more documents")
    return [
        f"kept {kept} of {kept + dropped} questions; dropped {dropped} whose documents are not in the "
        f"corpus at {corpus_root}, {len(documents)} absent document{'s' if len(documents) > 1 else ''}:",
        *listed,
    ]


def next_steps(
    dataset: TokenLevelDataset | ChunkLevelDataset,
    source: Path,
    out: Path,
    files: ProjectFiles,
    flags: list[str],
) -> list[str]:
    """The exact next step after an import: none when ``out`` is where `rag-eval run` looks for the
    golden set (and evaluate_on uses it), else the command that evaluates on it, or the import that makes
    it the golden set."""
    if isinstance(dataset, ChunkLevelDataset):
        return [
            "next: `rag-eval run` evaluates token-level questions; evaluate these chunk-level ones from "
            f"Python (ChunkLevelEvaluation, see docs/api/notebook.md) or push them: rag-eval dataset push {quote(out)}"
        ]
    golden = files.path(files.golden_dataset).resolve()
    generation = files.path(files.generation_file)
    try:
        evaluate_on = files.load_settings(GenerationSettings).evaluate_on
    except InputError:  # `rag-eval run` reports the broken file; the import itself is done
        evaluate_on = "golden"
    switch = (
        [f"  set evaluate_on: golden (or both) in {generation}: it is synthetic now"]
        if evaluate_on == "synthetic"
        else []
    )
    if out.resolve() == golden:
        if not switch:
            return [f"next: `rag-eval run` evaluates on these questions (the project's golden set, {golden})"]
        return [
            "next, for `rag-eval run` to evaluate on these questions (the project's golden set):",
            *switch,
        ]
    replacing = f", replacing {golden}" if golden.exists() else ""
    again = ["rag-eval", "dataset", "import", str(source), *flags]
    return [
        "next, to evaluate on these questions:",
        *switch,
        f"  {GOLDEN_DATASET_ENV}={quote(out)} rag-eval run",
        f"or make them the project's golden set{replacing} (then `rag-eval run` and the UI use them):",
        f"  {shlex.join([*again, '--out', str(golden)])}",
    ]


def quote(path: Path) -> str:
    return shlex.quote(str(path))


def _write(dataset: TokenLevelDataset | ChunkLevelDataset, out: Path, source: Path | str) -> None:
    write_jsonl(dataset, out)
    print(f"{len(dataset)} {dataset.evaluation_type} questions from {source} written to {out}")


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_dataset_command(args, context.files)
