from rag_eval_pipeline.core.text_table import format_table, markdown_table


def test_a_markdown_table_has_a_header_a_rule_and_a_line_per_row() -> None:
    table = markdown_table(("metric", "mean"), [("span_iou", "0.5000"), ("", "n/a")])
    assert table.splitlines() == ["| metric | mean |", "|---|---|", "| span_iou | 0.5000 |", "|  | n/a |"]


def test_a_markdown_table_without_rows_is_its_header() -> None:
    assert markdown_table(["a", "b", "c"], []) == "| a | b | c |\n|---|---|---|"


def test_a_text_table_aligns_its_columns() -> None:
    assert format_table(["a", "bb"], [["ccc", "d"]]).splitlines() == ["a    bb", "---  --", "ccc  d"]
