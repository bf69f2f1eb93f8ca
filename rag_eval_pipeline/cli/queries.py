"""`rag-eval queries import FILE | list`: the queries users really asked, read from a log export, merged
(duplicates and near-duplicates, counts added) and stored in the workspace's judging folder
(``data/judging/queries.jsonl``), the queries that pooling and annotation then work on.

Personal data is looked for before anything is stored (core/judging/pii.py). By default a file with a
flagged query is refused whole, nothing written, and the flagged queries are listed with the data itself
masked: the user chooses, knowingly, ``--redact-pii`` (the matches replaced by ``[e-mail]``, ``[phone]``,
... before storing) or ``--allow-pii`` (stored as is, the query marked with what was found). A default
that stores, even redacted, would put a log's personal data one careless import away from a commit.

Formats: core/judging/query_import.py; merging and re-imports: core/judging/query_merge.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import InputError
from ..core.judging.pii import pii_kinds, redact_pii
from ..core.judging.query_import import QUERY_FORMATS, RawQuery, ReadQueries, read_queries
from ..core.judging.query_merge import contributions_of, import_contribution, merge_queries, total_traffic
from ..core.judging.store import JudgingStore
from ..core.judging.types import query_id_for
from ..core.project.project_files import ProjectFiles
from .output import add_format_argument, render_records
from .registry import CommandContext, add_command

DESCRIPTION = """\
The queries users asked, to judge and evaluate on.

  rag-eval queries import FILE [--format auto|jsonl|csv|langsmith|otel] [--redact-pii | --allow-pii]
      read the queries of FILE, merge duplicates and near-duplicates (counts added) and store them with
      the workspace's other queries; importing a file again replaces what it gave before
  rag-eval queries list [--limit N]     the stored queries, most asked first

Formats (examples in data/examples/queries/ of the rag-eval source):
  jsonl      {"query": "...", "count": 3, "id": "..."} a line (count or weight optional, default 1)
  csv        a header row with a query column (optional count or weight, id)
  langsmith  runs as LangSmith's list_runs gives them (JSON lines or an array): one query per trace,
             from its retriever run's inputs (else its root run's)
  otel       OpenTelemetry / OpenInference spans (JSON lines, flat or OTLP/JSON): one query per trace,
             the input.value of its RETRIEVER span (else its root span's)

Queries holding what looks like an e-mail address, a phone or card number or a key are listed (masked)
and, unless --redact-pii or --allow-pii, nothing is stored."""

# Flagged queries printed before the rest are counted.
MAX_FLAGGED_LISTED = 20
UNITS = {"jsonl": "lines", "csv": "rows", "langsmith": "runs", "otel": "spans"}


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    queries = add_command(
        commands, "queries", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    actions = queries.add_subparsers(dest="action", required=True, metavar="{import,list}")
    imported = actions.add_parser(
        "import",
        help="read a file of queries, merge them and store them in data/judging",
        description="Read the queries of FILE, merge duplicates and near-duplicates, look for personal data, "
        "and store them with the workspace's queries (a file imported again replaces its earlier import).",
    )
    imported.add_argument("file", type=Path, help="the file of queries, relative to the current directory")
    imported.add_argument(
        "--format",
        choices=("auto", *QUERY_FORMATS),
        default="auto",
        help="the file's format (default auto: from the extension and the first record; it says what it chose)",
    )
    pii = imported.add_mutually_exclusive_group()
    pii.add_argument(
        "--redact-pii",
        action="store_true",
        help="replace what looks like personal data or a key by [e-mail], [phone], [card-number] or [key] "
        "before storing",
    )
    pii.add_argument(
        "--allow-pii",
        action="store_true",
        help="store queries that look like they hold personal data as they are (each marked with what was found)",
    )
    listed = actions.add_parser("list", help="the stored queries, most asked first")
    listed.add_argument(
        "--limit", type=int, default=50, metavar="N", help="show the N most asked (default 50; 0: all)"
    )
    add_format_argument(listed)


def run_queries_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    store = JudgingStore(files.path(files.judging_dir))
    if args.action == "import":
        return _import(args, files, store)
    return _list(args, store)


def _import(args: argparse.Namespace, files: ProjectFiles, store: JudgingStore) -> int:
    cwd: Path = getattr(args, "cwd", None) or Path.cwd()
    path = (cwd / args.file.expanduser()).resolve()
    read = read_queries(path, args.format)
    flagged = [(q, pii_kinds(q.text)) for q in read.queries]
    flagged = [(q, kinds) for q, kinds in flagged if kinds]
    for line in _read_summary(read):
        print(line)
    if flagged and not (args.allow_pii or args.redact_pii):
        for line in _flagged_lines(read, flagged):
            print(line, file=sys.stderr)
        raise InputError(
            f"{len(flagged)} quer{'y' if len(flagged) == 1 else 'ies'} of {path} look like they hold personal "
            "data or a secret (listed above, masked); nothing was stored. Remove them from the file, or import "
            "with --redact-pii (replace what was found by a marker) or --allow-pii (store them as they are)"
        )
    if flagged:
        what = "redacted (--redact-pii)" if args.redact_pii else "stored as they are and marked (--allow-pii)"
        print(f"{len(flagged)} flagged for personal data, {what}:")
        for line in _flagged_lines(read, flagged):
            print(line)
    kinds = {id(q): k for q, k in flagged}
    records = [
        (
            redact_pii(q.text) if args.redact_pii else q.text,
            q.count,
            q.place,
            () if args.redact_pii else kinds.get(id(q), ()),
        )
        for q in read.queries
    ]
    source = _source_name(path, files.root)
    contribution = contributions_of(source, records)
    alone = merge_queries(contribution)
    exact = len({query_id_for(text) for text, *_ in records})
    result = import_contribution(store, source, contribution)
    traffic = total_traffic(alone)
    print(
        f"{len(alone)} quer{'y' if len(alone) == 1 else 'ies'} from this file after merging "
        f"{len(records) - exact} duplicate(s) and {exact - len(alone)} near-duplicate(s); "
        f"{len(flagged)} flagged for personal data; traffic {traffic}"
    )
    again = f" (replacing this file's earlier import: {result.replaced} text(s))" if result.replaced else ""
    print(
        f"stored {len(result.queries)} quer{'y' if len(result.queries) == 1 else 'ies'}, total traffic "
        f"{total_traffic(result.queries)}, in {store.queries_path}{again}"
    )
    return 0


def _read_summary(read: ReadQueries) -> list[str]:
    how = f"chosen by --format auto: {read.chosen_because}" if read.chosen_because else "as given"
    lines = [f"read {read.records} {UNITS[read.format]} from {read.path} (format {read.format}, {how})"]
    if read.skipped:
        parts = ", ".join(f"{n} {reason}" for reason, n in read.skipped.items())
        lines.append(f"skipped, as not a trace's query: {parts}; {len(read.queries)} queries taken")
    if read.ignored_fields:
        lines.append(
            f"ignored field(s): {', '.join(read.ignored_fields)} (a query has query, count or weight, id)"
        )
    return lines


def _flagged_lines(read: ReadQueries, flagged: Sequence[tuple[RawQuery, Sequence[str]]]) -> list[str]:
    lines = [
        f"  {read.path.name}, line {q.line}: {redact_pii(q.text)!r} ({', '.join(kinds)})"
        for q, kinds in flagged[:MAX_FLAGGED_LISTED]
    ]
    if len(flagged) > MAX_FLAGGED_LISTED:
        lines.append(f"  ... and {len(flagged) - MAX_FLAGGED_LISTED} more")
    return lines


def _source_name(path: Path, root: Path) -> str:
    """The key of a file's contribution: its path relative to the workspace when inside it (so a
    workspace moved or cloned elsewhere still recognises its files), else absolute."""
    try:
        return path.relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _list(args: argparse.Namespace, store: JudgingStore) -> int:
    queries = store.read_queries()
    if not queries:
        print(
            "no queries imported yet: `rag-eval queries import FILE` reads them from a log", file=sys.stderr
        )
        return 1
    queries = sorted(queries, key=lambda q: (-q.count, q.query_id))
    shown = queries if args.limit <= 0 else queries[: args.limit]
    if args.format == "table":
        more = f"; the {len(shown)} most asked" if len(shown) < len(queries) else ""
        print(f"{len(queries)} queries, total traffic {total_traffic(queries)} ({store.queries_path}{more})")
    records = [
        {
            "query_id": q.query_id,
            "count": q.count,
            "text": q.text,
            "variants": list(q.variants),
            "pii": list(q.pii),
        }
        for q in shown
    ]
    print(render_records(records, args.format, ("query_id", "count", "text", "variants", "pii")))
    return 0


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_queries_command(args, context.files)
