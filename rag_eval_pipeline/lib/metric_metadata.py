"""Metric values as asset metadata, as a reader compares them: rounded to four significant digits
(core/significant_digits.py), still numbers so the UI plots them over time; a table of them as Dagster's
table metadata, which the UI shows inline."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

from ..core.leaderboard.render_table import BoardTable
from ..core.significant_digits import significant


def metric_value(value: float) -> dg.FloatMetadataValue:
    """A metric mean, rate, threshold or score as float metadata at four significant digits."""
    return dg.MetadataValue.float(significant(float(value)))


def with_metric_values(
    values: Mapping[str, str | int | float | None],
) -> dict[str, dg.RawMetadataValue]:
    """``values`` with every float as ``metric_value``; text, counts and None unchanged."""
    return {k: metric_value(v) if isinstance(v, float) else v for k, v in values.items()}


def table_value(table: BoardTable) -> dg.TableMetadataValue:
    """``table`` as table metadata: a column per ``Column`` (its type, and its description under the
    UI's "Show schema"), a record per row."""
    schema = dg.TableSchema(
        columns=[dg.TableColumn(c.name, c.type, description=c.description) for c in table.columns]
    )
    return dg.MetadataValue.table([dg.TableRecord(record) for record in table.records()], schema)
