"""What a command prints as rows: an aligned table (the default), CSV or JSON, chosen by ``--format``.

One renderer for every command that prints records (query, status, list, results, questions, the
config edits, cancel), so a script reading ``--format json`` of one reads the others the same way.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, get_args

import pandas as pd

from ..core.tables import json_value
from ..core.text_table import format_table

OutputFormat = Literal["table", "csv", "json"]
FORMATS: tuple[str, ...] = get_args(OutputFormat)


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=FORMATS, default="table", help="table (default), csv or json (one record a row)"
    )


def render(frame: pd.DataFrame, fmt: str) -> str:
    """Rows as an aligned text table (with a row count), CSV or JSON records."""
    if fmt == "csv":
        return str(frame.to_csv(index=False)).rstrip("\n")
    if fmt == "json":
        return json.dumps(
            [{k: json_value(v) for k, v in row.items()} for row in frame.to_dict("records")],
            indent=2,
            ensure_ascii=False,
            default=str,
        )
    if frame.empty:
        return (
            format_table(list(map(str, frame.columns)), []) + "\n(0 rows)"
            if len(frame.columns)
            else "(0 rows)"
        )
    rows = [[str(c) for c in frame.columns]]
    rows += [[cell(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    return format_table(rows[0], rows[1:]) + f"\n({len(frame)} row{'s' * (len(frame) != 1)})"


def render_records(records: Sequence[Mapping[str, Any]], fmt: str, columns: Sequence[str] = ()) -> str:
    """``render`` of plain records (``columns`` fixes the columns and their order, also with no row)."""
    frame = pd.DataFrame(list(records), columns=list(columns) or None)
    return render(frame, fmt)


def cell(value: Any) -> str:
    """A value as a table cell: empty for a missing value, 6 significant digits for a float."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)
