"""`rag-eval` (also `python -m rag_eval_pipeline`): the main job from a terminal, on the project's
Dagster instance, so every run it makes shows up in the UI too."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .core.errors import InputError
from .project import project_dir

if TYPE_CHECKING:
    import dagster as dg

LEADERBOARD_COLUMNS = ("span_recall", "span_precision", "span_iou", "recall_at_k", "mrr")
ANSWER_COLUMNS = ("keyword", "semantic_dynamic", "llm_judge")


@contextmanager
def project_instance(root: Path) -> Iterator[dg.DagsterInstance]:
    """$DAGSTER_HOME when set, else the project's own dagster.yaml (storage under .dagster/)."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    if os.environ.get("DAGSTER_HOME"):
        with dg.DagsterInstance.get() as instance:
            yield instance
        return
    home = root / ".dagster"
    home.mkdir(exist_ok=True)
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), config_dir=str(root))) as instance:
        yield instance


def run_main_job(
    instance: dg.DagsterInstance,
    chunk_configs: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    show_progress: bool = True,
    resources: dict[str, object] | None = None,
) -> tuple[pd.DataFrame | None, list[str]]:
    """Materialize every asset for every (selected) partition, one run per partition; a failed
    partition is reported and the others still run. Returns the leaderboard and the failures."""
    import dagster as dg
    from tqdm import tqdm

    from .definitions import build_definitions
    from .partitions import CHUNK_CONFIG, PROFILE
    from .resources import ProjectResource
    from .sensors import sync_partitions

    project = (resources or {}).get("project") or ProjectResource()
    assert isinstance(project, ProjectResource)
    configs = project.load_configs()
    changes = sync_partitions(instance, configs)
    selected_configs = _select("chunk config", [c.name for c in configs.chunk_configs], chunk_configs)
    selected_profiles = _select("profile", [p.name for p in configs.profiles], profiles)
    for name in changes.removed_chunk_configs + changes.removed_profiles:
        print(f"note: {name} is no longer configured; its partitions and history are kept", file=sys.stderr)

    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    plan: list[tuple[str, str, dg.MultiPartitionKey | str | None]] = [
        ("ingestion_job", "corpus and questions", None)
    ]
    plan += [("chunking_job", f"chunks + index {c}", c) for c in selected_configs]
    plan += [
        ("evaluation_job", f"evaluate {c} x {p}", dg.MultiPartitionKey({CHUNK_CONFIG: c, PROFILE: p}))
        for c in selected_configs
        for p in selected_profiles
    ]
    plan.append(("leaderboard_job", "leaderboard", None))

    defs = build_definitions(resources)
    failures: list[str] = []
    steps = tqdm(plan, desc="main job", unit="run", disable=not show_progress)
    for job_name, label, partition_key in steps:
        steps.set_postfix_str(label)
        job = defs.resolve_job_def(job_name)
        result = job.execute_in_process(
            instance=instance,
            partition_key=partition_key,
            run_config=quiet,
            raise_on_error=False,
        )
        if not result.success:
            failures.append(f"{label} (run {result.run_id}): {_failure_message(result)}")
            if job_name == "ingestion_job":
                break
    board = _read_current_leaderboard(resources)
    return board, failures


def _select(kind: str, known: list[str], wanted: Sequence[str] | None) -> list[str]:
    if not wanted:
        return known
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise InputError(f"unknown {kind}(s) {', '.join(unknown)}; configured: {', '.join(known)}")
    return list(wanted)


def _failure_message(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data is not None and event.step_failure_data.error:
            return event.step_failure_data.error.message.strip()
    return "the run failed (see its log in the Dagster UI)"


def _read_current_leaderboard(resources: dict[str, object] | None) -> pd.DataFrame | None:
    from .io_managers import ParquetIOManagerFactory

    factory = (resources or {}).get("io_manager") or ParquetIOManagerFactory()
    assert isinstance(factory, ParquetIOManagerFactory)
    path = Path(factory.base_dir) / "current" / "leaderboard.parquet"
    return pd.read_parquet(path) if path.exists() else None


def format_leaderboard(board: pd.DataFrame) -> str:
    """A plain-text table: mean and bootstrap 95% CI per headline retrieval metric, then the answer
    metrics' means (n/a where answers were not evaluated or the judge did not run)."""
    answer_columns = [m for m in ANSWER_COLUMNS if f"{m}_mean" in board.columns]
    header = ["rank", "chunk_config", "profile", "k", *LEADERBOARD_COLUMNS, *answer_columns]
    rows = [header]
    for _, row in board.iterrows():
        cells = [str(row["rank"]), str(row["chunk_config"]), str(row["profile"]), str(row["top_k"])]
        for metric in LEADERBOARD_COLUMNS:
            cells.append(
                f"{row[f'{metric}_mean']:.3f} [{row[f'{metric}_ci_low']:.2f}-{row[f'{metric}_ci_high']:.2f}]"
            )
        for metric in answer_columns:
            value = row[f"{metric}_mean"]
            cells.append("n/a" if pd.isna(value) else f"{value:.3f}")
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rag-eval", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run", help="materialize every asset for every partition, print the leaderboard"
    )
    run.add_argument("--chunk-configs", help="comma-separated chunk config names (default: all)")
    run.add_argument("--profiles", help="comma-separated retrieval profile names (default: all)")
    commands.add_parser("leaderboard", help="print the current leaderboard")
    from .dataset_cli import add_dataset_commands, run_dataset_command

    add_dataset_commands(commands)
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore")
    root = project_dir()
    os.chdir(root)  # dagster.yaml's relative storage paths are relative to the project root
    if args.command == "dataset":
        from .resources import ProjectResource

        return run_dataset_command(args, ProjectResource(root=str(root)))
    if args.command == "leaderboard":
        board = _read_current_leaderboard(None)
        if board is None:
            print("no leaderboard yet: run `rag-eval run` first", file=sys.stderr)
            return 1
        print(format_leaderboard(board))
        return 0

    from .assets.common import PROGRESS_BAR_ENV

    show = sys.stderr.isatty()
    if show:
        os.environ[PROGRESS_BAR_ENV] = "1"
    try:
        with project_instance(root) as instance:
            board, failures = run_main_job(
                instance,
                chunk_configs=args.chunk_configs.split(",") if args.chunk_configs else None,
                profiles=args.profiles.split(",") if args.profiles else None,
                show_progress=show,
            )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if board is not None:
        print(format_leaderboard(board))
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0
