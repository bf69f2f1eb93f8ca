"""`rag-eval search`: race the space of data/search.yaml (core/search/) and print the winning tier, the
Pareto front, every candidate's fate and the compute saved against the full grid."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.project.project_files import ProjectFiles
from ..core.search.settings import SearchSettings
from .registry import CommandContext, add_command


def add_commands(commands: Any) -> None:
    parser = add_command(
        commands,
        "search",
        description="Race every candidate of data/search.yaml on a growing sample of the evaluation's "
        "questions, eliminating each as soon as it is significantly worse than the best (paired test, Holm). "
        "Runs search_job in this process on the workspace's instance (the UI shows the race as the "
        "partitions of search_race). Run it again after a kill or a spent budget: it resumes.",
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="write the winning tier's chunk configs and profiles into data/ (comments kept, within "
        "max_chunk_configs)",
    )


def run_search_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    from ..core.progress import show_progress_bars
    from ..runner.instance import project_instance
    from ..runner.search import run_search_job

    files.load_settings(SearchSettings)  # a broken file: exit 2 before any run
    with project_instance(files.root) as instance:
        if sys.stderr.isatty():
            show_progress_bars()
        searched = run_search_job(instance)
    if searched.failure is not None:
        print(f"the search failed (run {searched.run_id}): {searched.failure}", file=sys.stderr)
        return 2 if searched.failure.bad_input else 1
    print(searched.text)
    print(f'run {searched.run_id}; every candidate: rag-eval query "select * from search_candidates"')
    if not args.apply:
        return 0
    return _apply(files, searched.winning_tier)


def _apply(files: ProjectFiles, winners: list[str]) -> int:
    from ..core.search.apply import apply_winners
    from ..core.search.candidates import Candidate, candidates

    if not winners:
        print("nothing to apply: the search named no winning tier (its budget ran out)", file=sys.stderr)
        return 1
    by_key: dict[str, Candidate] = {c.key: c for c in candidates(files.load_settings(SearchSettings))}
    applied = apply_winners(
        [by_key[k] for k in winners if k in by_key],
        files.path(files.chunk_configs_file),
        files.path(files.profiles_file),
    )
    print(applied.describe(files.chunk_configs_file, files.profiles_file))
    return 0


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_search_command(args, context.files)
