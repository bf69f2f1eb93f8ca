"""`rag-eval explain QUESTION_ID [--chunk-config C] [--profile P]`: why a question's reference text was
missed, from the current `retrieval_diagnostics` tables (core/diagnostics/explain.py prints it)."""

from __future__ import annotations

import argparse
import sys

from ..core.diagnostics.explain import explain_across, explain_question
from ..core.errors import InputError
from ..core.store.warehouse import Warehouse
from ..core.tables import corpus_from_frame, records
from .registry import CommandContext, add_command

TABLE = "retrieval_diagnostics"


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    explain = add_command(
        commands,
        "explain",
        description="One question in one partition (both options, or the only partition they leave): the "
        "question, its reference spans, what each stage returned and where the reference was lost. "
        "In several partitions: a line each.",
    )
    explain.add_argument("question_id")
    explain.add_argument("--chunk-config", help="only this chunk config")
    explain.add_argument("--profile", help="only this retrieval profile")


def run_explain_command(args: argparse.Namespace, warehouse: Warehouse) -> int:
    partitions = [
        p
        for p in warehouse.current_partitions(TABLE)
        if args.chunk_config in (None, p.get("chunk_config")) and args.profile in (None, p.get("profile"))
    ]
    if not partitions:
        wanted = " x ".join(x for x in (args.chunk_config, args.profile) if x) or "any partition"
        print(
            f"error: no {TABLE} for {wanted} in {warehouse.current_dir}: run `rag-eval run` first "
            f"(it builds {TABLE} with each evaluation)",
            file=sys.stderr,
        )
        return 1
    rows = []
    for partition in partitions:
        frame = warehouse.read_current(TABLE, partition)
        if frame is None or "question_id" not in frame.columns:
            continue
        found = frame[frame["question_id"].astype(str) == args.question_id]
        rows += records(found)
    if not rows:
        searched = ", ".join(f"{p['chunk_config']} x {p['profile']}" for p in partitions)
        raise InputError(
            f"question {args.question_id!r} is not in {TABLE} of {searched}: "
            'see `rag-eval query "select distinct question_id from retrieval_diagnostics"`'
        )
    if len(rows) > 1:
        print(explain_across(rows))
        print(
            f"\n`rag-eval explain {args.question_id} --chunk-config C --profile P` shows one partition's "
            "stages, ranks and scores."
        )
        return 0
    print(explain_question(rows[0], _documents(warehouse)))
    return 0


def _documents(warehouse: Warehouse) -> dict[str, str] | None:
    """The corpus as the evaluation read it (the current `corpus` table), for the excerpts."""
    frame = warehouse.read_current("corpus")
    if frame is None:
        return None
    return {d.doc_id: d.text for d in corpus_from_frame(frame).documents}


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_explain_command(args, context.warehouse)
