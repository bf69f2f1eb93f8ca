import json

import dagster as dg

from rag_eval_pipeline.core.leaderboard.render_table import BoardTable, Column
from rag_eval_pipeline.lib.metric_metadata import metric_value, table_value, with_metric_values


def test_a_metric_is_float_metadata_at_four_significant_digits() -> None:
    value = metric_value(0.12055534294415841)
    assert isinstance(value, dg.FloatMetadataValue) and value.value == 0.1206
    assert metric_value(1).value == 1.0  # an int (a count-based rate of 1) is still a float entry


def test_only_the_floats_of_a_mapping_are_rounded() -> None:
    rounded = with_metric_values({"best_score": 0.575123456, "n_ranked": 2, "best": "a x b", "cost": None})
    assert rounded["best_score"] == metric_value(0.575123456) and rounded["n_ranked"] == 2
    assert rounded["best"] == "a x b" and rounded["cost"] is None


def test_a_board_table_is_table_metadata_the_ui_can_parse() -> None:
    table = BoardTable(
        (Column("rank", "string", "1 is best"), Column("span IoU", "string", "mean [CI]")),
        (("1", "0.1206 [0.1071, 0.1331]"), ("-", "n/a")),
    )
    value = table_value(table)
    assert isinstance(value, dg.TableMetadataValue)
    assert [(c.name, c.type, c.description) for c in value.schema.columns] == [
        ("rank", "string", "1 is best"),
        ("span IoU", "string", "mean [CI]"),
    ]
    assert [r.data for r in value.records] == table.records()
    # what the instance stores and the UI reads back: one JSON object per record, keyed by column
    stored = dg.deserialize_value(dg.serialize_value(value), dg.TableMetadataValue)
    assert [json.loads(json.dumps(r.data)) for r in stored.records] == table.records()
