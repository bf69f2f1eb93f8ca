"""`rag-eval leaderboard [--pareto [--cost AXIS]]`: the current leaderboard as the last evaluation ranked
it, or the Pareto front of its objective against one of its costs."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.errors import InputError
from ..core.evaluation.costs import COST_AXES
from ..core.leaderboard.pareto import DEFAULT_COST_AXIS
from ..core.store.warehouse import LEADERBOARD, Warehouse
from .registry import CommandContext, add_command


def add_commands(commands: Any) -> None:
    parser = add_command(commands, "leaderboard")
    parser.add_argument(
        "--pareto",
        action="store_true",
        help="only the setups no other beats on both the objective and the cost, cheapest first",
    )
    parser.add_argument(
        "--cost",
        choices=list(COST_AXES),
        default=DEFAULT_COST_AXIS,
        help=f"the cost axis of --pareto (default {DEFAULT_COST_AXIS}: the tokens the generator reads)",
    )


def run_leaderboard_command(args: argparse.Namespace, warehouse: Warehouse) -> int:
    board = warehouse.read_current(LEADERBOARD)
    if board is None:
        print("no leaderboard yet: run `rag-eval run` first", file=sys.stderr)
        return 1
    if args.pareto:
        from ..core.leaderboard.render_pareto import format_pareto

        print(format_pareto(board, args.cost))
        return 0
    if args.cost != DEFAULT_COST_AXIS:
        raise InputError("--cost chooses the axis of --pareto: add --pareto")
    from ..core.leaderboard.render_text import format_leaderboard

    print(format_leaderboard(board))
    return 0


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    return run_leaderboard_command(args, context.warehouse)
