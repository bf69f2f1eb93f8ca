"""Plain-text tables and numbers as the command line and the checks' metadata print them."""

from __future__ import annotations

import math
from collections.abc import Sequence


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, a dashed rule under the header."""
    table = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_number(value: float, sign: str = "") -> str:
    """Four decimals (``sign="+"`` for a difference), "n/a" for NaN."""
    return "n/a" if math.isnan(value) else f"{value:{sign}.4f}"
