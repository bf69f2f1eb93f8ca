"""Plain-text tables and numbers as the command line and the checks' metadata print them, and the
markdown tables of the assets' and checks' metadata (one writer, so every table has the same shape)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, a dashed rule under the header."""
    table = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table: ``| a | b |`` lines, a ``|---|---|`` rule under the header.
    Cells are written as given (a cell holding ``|`` would split its column)."""
    lines = [_markdown_row(header), "|" + "---|" * len(header)]
    lines += [_markdown_row(row) for row in rows]
    return "\n".join(lines)


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def format_number(value: float, sign: str = "") -> str:
    """Four decimals (``sign="+"`` for a difference), "n/a" for NaN."""
    return "n/a" if math.isnan(value) else f"{value:{sign}.4f}"
