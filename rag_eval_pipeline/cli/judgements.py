"""`rag-eval pool build` and `rag-eval judgements status|export`: the text to judge for the imported
queries, how far the judging is, and the judgements written as the golden question set
(runner/judging.py on core/judging/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.errors import InputError
from ..core.generation.settings import GenerationSettings
from ..core.judging.judged_at_k import UNJUDGED_THRESHOLD
from ..core.judging.pool import DEFAULT_DEPTH
from ..core.judging.reanchor import StaleJudgement
from ..core.judging.runs import BM25_RUN, DENSE_RUN, WINDOW_OVERLAP, WINDOW_SIZE
from ..core.progress import Progress, no_progress
from ..core.project.project_files import ProjectFiles
from ..core.text_table import format_table
from .llm_judge import add_llm_judge_action, run_llm_judge_command
from .registry import CommandContext, add_command

POOL_DESCRIPTION = f"""\
Pool the text to judge for every imported query (TREC-style): the top --depth chunks of every
configured setup (chunk config x retrieval profile) and of two runs over the documents cut into fixed
windows of {WINDOW_SIZE} characters overlapping by {WINDOW_OVERLAP} ({BM25_RUN}, {DENSE_RUN}), merged by
character range so no character is shown twice. Text some judge already read stays in the pool but is
not new: a new chunk config adds only the text nobody read. Written to data/judging/pool.jsonl.
Embeds through the workspace's embedding cache; writes no index."""

JUDGEMENTS_DESCRIPTION = """\
  rag-eval judgements status [--k K,...] [--threshold SHARE]
      queries judged, judged@k of every setup (the share of its top k some judge read, by characters;
      a setup with more than --threshold unjudged is flagged with what to do) and agreement between
      judges (Cohen's kappa on the passages both read, span overlap)
  rag-eval judgements export [--out FILE]
      the judged queries with an answer as token-level questions, written into the golden file
      (data/datasets/golden_token_level.jsonl, or --out): rows of an earlier export replaced, other
      rows kept"""


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pool = add_command(
        commands, "pool", description=POOL_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    pool_actions = pool.add_subparsers(dest="action", required=True, metavar="{build}")
    build = pool_actions.add_parser("build", help="pool the top --depth of every setup and window run")
    build.add_argument(
        "--depth",
        type=_positive,
        default=DEFAULT_DEPTH,
        metavar="N",
        help=f"how many of each run's top hits are pooled (default {DEFAULT_DEPTH})",
    )
    judgements = add_command(
        commands,
        "judgements",
        description=JUDGEMENTS_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = judgements.add_subparsers(dest="action", required=True, metavar="{status,export,llm}")
    status = actions.add_parser("status", help="queries judged, judged@k per setup, agreement per judge pair")
    status.add_argument(
        "--k",
        type=_ks,
        default=(),
        metavar="K,...",
        help="judged@k at these k too (always at each profile's top_k, the k it is evaluated at)",
    )
    status.add_argument(
        "--threshold",
        type=_share,
        default=UNJUDGED_THRESHOLD,
        metavar="SHARE",
        help=f"flag a setup whose top k is more than this share unjudged (default {UNJUDGED_THRESHOLD})",
    )
    export = actions.add_parser("export", help="write the judged questions into the golden file")
    export.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="the JSONL to write into, relative to the current directory (default: the workspace's golden "
        "file, data/datasets/golden_token_level.jsonl)",
    )
    add_llm_judge_action(actions)


def run_judgement_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    if args.command == "pool":
        return _pool_build(args, files)
    if args.action == "status":
        return _status(args, files)
    if args.action == "llm":
        return run_llm_judge_command(args, files)
    return _export(args, files)


def _pool_build(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..runner.judging import build_workspace_pool

    built = build_workspace_pool(files, args.depth, _progress())
    setups = [r.name for r in built.runs.runs if r.name in built.runs.evaluated_k]
    print(
        f"pooled the top {args.depth} of {len(setups)} setups and {BM25_RUN}, {DENSE_RUN} for "
        f"{len(built.pools)} queries"
    )
    rows = [
        [
            pool.query_id,
            str(len(pool.passages)),
            str(len(pool.new)),
            f"{pool.new_chars:,}",
            f"{pool.judged_chars:,}",
        ]
        for pool in built.pools
    ]
    print(format_table(["query", "passages", "new", "characters to read", "already judged"], rows))
    new_passages = sum(len(p.new) for p in built.pools)
    judged_passages = sum(len(p.judged) for p in built.pools)
    to_read = sum(p.new_chars for p in built.pools)
    judged = sum(p.judged_chars for p in built.pools)
    print(
        f"total: {new_passages + judged_passages} passages, {to_read:,} characters to read in {new_passages} "
        f"new passages; {judged:,} characters in {judged_passages} passages already judged"
    )
    print(f"written to {built.path}")
    for line in built.runs.skipped:
        print(f"skipped profile {line}", file=sys.stderr)
    _print_stale(built.anchored.stale)
    if to_read:
        print("next: judge them in the browser, `rag-eval annotate`")
    return 0


def _status(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..runner.judging import workspace_status

    status = workspace_status(files, args.k, args.threshold, _progress())
    print(
        f"queries judged: {status.n_judged} of {status.n_queries} imported; {status.n_questions} with an "
        f"answer (the questions `rag-eval judgements export` writes)"
    )
    if not status.n_judged:
        first = "" if status.n_pooled else "`rag-eval pool build`, then "
        print(f"next: {first}judge the pooled passages with `rag-eval annotate`")
    if status.judged:
        print(
            f"\njudged@k (the share of each setup's top k some judge read, by characters, mean over the "
            f"{status.n_judged} judged queries; ! more than {status.threshold:.0%} unjudged):"
        )
        rows = [
            [
                j.setup,
                str(j.k),
                f"{j.judged_share:.2f}" + (" !" if j.flagged(status.threshold) else ""),
                f"{j.unjudged_chars:,} of {j.retrieved_chars:,}",
            ]
            for j in status.judged
        ]
        print(format_table(["setup", "k", "judged@k", "unjudged characters"], rows))
    for hole in status.holes:
        print(f"flagged {hole.judged.setup}: {hole.advice()}")
    if status.agreement:
        print("\nagreement (on the queries both judged):")
        for pair in status.agreement:
            print(f"  {pair.describe()}")
    elif status.n_judged:
        print("\nagreement: no query judged by two judges yet")
    for line in status.skipped:
        print(f"skipped profile {line}", file=sys.stderr)
    _print_stale(status.anchored.stale)
    if status.anchored.reanchored:
        print(f"{status.anchored.reanchored} judgements moved with edited documents (re-anchored)")
    return 0


def _export(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..runner.judging import export_judgements
    from .datasets import absolute

    out = absolute(args.out, getattr(args, "cwd", None) or Path.cwd()) if args.out else None
    done = export_judgements(files, out)
    questions = done.questions
    _print_stale(questions.stale)
    if questions.not_imported:
        print(
            f"{len(questions.not_imported)} judged queries are no longer imported (their text is unknown) and "
            f"were left out: {', '.join(questions.not_imported)}",
            file=sys.stderr,
        )
    if questions.without_answer:
        print(
            f"{len(questions.without_answer)} judged queries have no answer in the documents (not answerable, "
            f"answered elsewhere or unclear) and make no question"
        )
    if done.written is None:
        print("no judged query with an answer yet: judge some with `rag-eval annotate`", file=sys.stderr)
        return 1
    written = done.written
    print(
        f"{written.written} judged questions written to {written.path} ({written.replaced} rows of an earlier "
        f"export replaced, {written.kept} other rows kept)"
    )
    if questions.reanchored:
        print(f"{questions.reanchored} judgements moved with edited documents (re-anchored)")
    for line in _next_steps(files, written.path):
        print(line)
    return 0


def _next_steps(files: ProjectFiles, out: Path) -> list[str]:
    """How `rag-eval run` comes to evaluate on the written file: nothing when it is the golden file
    and evaluate_on uses it."""
    from ..core.project.project_files import GOLDEN_DATASET_ENV

    golden = files.path(files.golden_dataset).resolve()
    try:
        evaluate_on = files.load_settings(GenerationSettings).evaluate_on
    except InputError:  # `rag-eval run` reports the broken file; the export itself is done
        evaluate_on = "golden"
    steps = []
    if evaluate_on == "synthetic":
        steps.append(
            f"next: set evaluate_on: golden (or both) in {files.path(files.generation_file)}: "
            f"`rag-eval run` evaluates on synthetic questions only now"
        )
    if out.resolve() != golden:
        steps.append(f"next: evaluate on them with `{GOLDEN_DATASET_ENV}={out} rag-eval run`")
    return steps


def _print_stale(stale: tuple[StaleJudgement, ...]) -> None:
    if not stale:
        return
    print(
        f"{len(stale)} stale judgements (their answer is no longer in the documents; not used, their passages "
        f"are offered again):",
        file=sys.stderr,
    )
    for item in stale:
        print(f"  {item.describe()}", file=sys.stderr)


def _progress() -> Progress:
    from ..core.progress import TqdmProgress

    return TqdmProgress() if sys.stderr.isatty() else no_progress


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return number


def _ks(value: str) -> tuple[int, ...]:
    return tuple(_positive(part.strip()) for part in value.split(",") if part.strip())


def _share(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 <= share < 1:
        raise argparse.ArgumentTypeError(f"{value} must be a share between 0 and 1, e.g. 0.2 for 20 %")
    return share


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_judgement_command(args, context.files)
