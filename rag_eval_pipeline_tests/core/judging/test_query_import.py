"""Reading real queries: each format from its example file, what --format auto chooses, one query per
trace, and malformed input named by file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.judging.query_import import json_records, query_in, read_queries

EXAMPLES = Path(__file__).resolve().parents[3] / "data" / "examples" / "queries"
ROLL_BACK = "How do I roll back a release?"
RAW_EVENTS = "How long do we keep raw events?"
ON_CALL = "Who is on call this weekend?"


def write(path: Path, lines: list[object]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["queries.csv", "queries.jsonl"])
def test_a_plain_list_gives_every_line_with_its_count_and_id(name: str) -> None:
    read = read_queries(EXAMPLES / name)
    assert read.format == name.rsplit(".", 1)[1]
    assert read.chosen_because  # auto says why
    assert read.records == 6 and not read.skipped
    assert [(q.text, q.count) for q in read.queries] == [
        (RAW_EVENTS, 12),
        ("how long do we keep raw events", 3),
        (ON_CALL, 7),
        (ROLL_BACK, 5),  # from weight in the jsonl
        ("How do I roll back a release please?", 1),  # no count: asked once
        ("What does the ingestion gateway do?", 2),
    ]
    first_line = 2 if name.endswith(".csv") else 1  # the CSV's header is line 1
    assert [q.line for q in read.queries] == list(range(first_line, first_line + 6))
    assert read.queries[0].place == f"{first_line} id=q-101"


def test_a_langsmith_export_gives_one_query_per_trace_from_its_retriever_else_its_root() -> None:
    read = read_queries(EXAMPLES / "langsmith_runs.jsonl")
    assert read.format == "langsmith" and "run_type" in read.chosen_because
    assert read.records == 6
    # trace 2's root asks "who is on call this weekend" but its retriever got the query evaluated on
    assert [(q.text, q.line) for q in read.queries] == [(RAW_EVENTS, 2), (ON_CALL, 5), (ROLL_BACK, 6)]
    assert read.queries[0].record_id == "809ed3a2-0172-4f4d-8a02-a64e9b7a0f8a"
    assert read.skipped == {"not a retriever run": 3}  # two root chains with a retriever, one LLM run


def test_a_langsmith_export_as_one_json_array_reads_the_same(tmp_path: Path) -> None:
    runs = [json.loads(line) for line in (EXAMPLES / "langsmith_runs.jsonl").read_text().splitlines()]
    array = tmp_path / "runs.json"
    array.write_text(json.dumps(runs, indent=2), encoding="utf-8")
    read = read_queries(array)
    assert read.format == "langsmith"
    assert [q.text for q in read.queries] == [RAW_EVENTS, ON_CALL, ROLL_BACK]


def test_an_otel_export_reads_flat_spans_otlp_json_and_nested_attributes() -> None:
    read = read_queries(EXAMPLES / "otel_spans.jsonl")
    assert read.format == "otel" and "span" in read.chosen_because
    assert read.records == 6  # 3 flat spans, 2 spans in one OTLP line, 1 flat span
    assert [(q.text, q.line) for q in read.queries] == [(RAW_EVENTS, 2), (ON_CALL, 4), (ROLL_BACK, 5)]
    assert read.queries[1].record_id == "2b3c4d5e6f708192"  # the OTLP retriever span, not its root
    assert read.skipped == {"not a retriever span": 3}


def test_one_query_per_trace_takes_the_first_retriever_and_counts_the_others(tmp_path: Path) -> None:
    def span(
        span_id: str, kind: str, value: str, start: str, parent: str | None = "root"
    ) -> dict[str, object]:
        return {
            "name": span_id,
            "context": {"trace_id": "t1", "span_id": span_id},
            "parent_id": parent,
            "start_time": start,
            "attributes": {"openinference.span.kind": kind, "input.value": value},
        }

    path = write(
        tmp_path / "spans.jsonl",
        [
            span("b", "RETRIEVER", "rewritten query", "2026-12-01T10:00:02Z"),
            span("a", "RETRIEVER", "what users asked", "2026-12-01T10:00:01Z"),
            span("root", "CHAIN", "what users asked", "2026-12-01T10:00:00Z", parent=None),
        ],
    )
    read = read_queries(path)
    assert [q.text for q in read.queries] == ["what users asked"]
    assert read.skipped == {"not a retriever span": 1, "a further retriever span of a trace": 1}


def test_json_input_values_and_message_inputs_give_their_query() -> None:
    assert query_in({"input": {"question": "nested?"}}, "inputs") == ("nested?", "")
    messages = {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "last?"}]}
    assert query_in(messages, "inputs") == ("last?", "")
    assert query_in({"topic": "only string"}, "inputs") == ("only string", "")
    query, problem = query_in({"a": "one", "b": "two"}, "inputs")
    assert query is None and "field inputs has none of query, question" in problem


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("q.jsonl", '{"query": "fine"}\n{"query": "broken"\n', "line 2: not valid JSON"),
        ("q.jsonl", '{"query": "fine"}\n{"count": 3}\n', "line 2: field query is missing"),
        ("q.jsonl", '{"query": "fine"}\n{"query": "  "}\n', "line 2: field query is empty"),
        ("q.jsonl", '{"query": "a", "count": 0}\n', "line 1: field count is 0"),
        ("q.jsonl", '{"query": "a", "weight": 1.5}\n', "line 1: field weight is 1.5"),
        ("q.jsonl", '{"query": "a", "count": 2, "weight": 2}\n', "line 1: fields count and weight"),
        ("q.jsonl", '{"query": "a", "id": 7}\n{"query": "b", "id": 7}\n', "line 2: field id '7' already"),
        ("q.csv", "query,count\nfine,1\n,2\n", "line 3: field query is missing"),
        ("q.csv", "query,count\nfine,1\nother,lots\n", "line 3: field count is 'lots'"),
        ("q.csv", "question,count\nfine,1\n", "line 1: no query column"),
        ("q.csv", 'query,count\nfine,1\n"open quote,1\n', "line 3"),
        ("q.csv", "query\nfine,extra\n", "line 2: more cells than the header"),
    ],
)
def test_a_malformed_plain_list_names_the_file_and_line(
    tmp_path: Path, name: str, content: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_queries(path)
    assert str(caught.value).startswith(str(path))
    assert expected in str(caught.value)


def test_a_retriever_run_without_a_query_names_its_line_and_field(tmp_path: Path) -> None:
    runs = [
        {
            "id": "r1",
            "trace_id": "r1",
            "parent_run_id": None,
            "run_type": "chain",
            "inputs": {"question": "q?"},
        },
        {"id": "r2", "trace_id": "r1", "parent_run_id": "r1", "run_type": "retriever", "inputs": {"k": 4}},
    ]
    with pytest.raises(
        InputError, match=r"runs\.jsonl, line 2: the retriever run holds no query: field inputs"
    ):
        read_queries(write(tmp_path / "runs.jsonl", runs))
    runs[1]["inputs"] = "not an object"
    with pytest.raises(InputError, match=r"line 2: .*field inputs is missing or not an object"):
        read_queries(write(tmp_path / "runs.jsonl", runs))
    del runs[1]["run_type"]
    with pytest.raises(InputError, match=r"line 2: field run_type is missing"):
        read_queries(write(tmp_path / "runs.jsonl", runs), "langsmith")


def test_a_root_run_without_a_query_is_an_error_but_a_trace_without_root_or_retriever_is_skipped(
    tmp_path: Path,
) -> None:
    orphan = {"id": "x", "trace_id": "t9", "parent_run_id": "gone", "run_type": "llm", "inputs": {}}
    root = {
        "id": "r",
        "trace_id": "r",
        "parent_run_id": None,
        "run_type": "chain",
        "inputs": {"question": "q?"},
    }
    read = read_queries(write(tmp_path / "runs.jsonl", [root, orphan]))
    assert [q.text for q in read.queries] == ["q?"]
    assert read.skipped == {"not a retriever run": 1, "traces with no retriever and no root": 1}
    root["inputs"] = {}
    with pytest.raises(
        InputError, match=r"line 1: the root \(its trace has no retriever\) run holds no query"
    ):
        read_queries(write(tmp_path / "runs.jsonl", [root, orphan]))


def test_a_retriever_span_without_input_value_names_the_span(tmp_path: Path) -> None:
    otlp = json.loads((EXAMPLES / "otel_spans.jsonl").read_text().splitlines()[3])
    retriever = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    retriever["attributes"] = [a for a in retriever["attributes"] if a["key"] != "input.value"]
    with pytest.raises(
        InputError, match=r"line 1, span 2: the retriever span holds no query: attribute input.value"
    ):
        read_queries(write(tmp_path / "spans.jsonl", [otlp]))
    retriever["attributes"] = {"not": "a list"}
    with pytest.raises(InputError, match=r"line 1, span 2: field attributes must be a list"):
        read_queries(write(tmp_path / "spans.jsonl", [otlp]))
    flat = {"name": "r", "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": ""}}
    with pytest.raises(
        InputError, match=r"line 2: the retriever span holds no query: attribute input.value is empty"
    ):
        ok = {"name": "ok", "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": "fine"}}
        read_queries(write(tmp_path / "spans.jsonl", [ok, flat]))


def test_auto_refuses_a_file_it_cannot_tell_and_says_to_give_format(tmp_path: Path) -> None:
    path = write(tmp_path / "odd.jsonl", [{"question": "no query field"}])
    with pytest.raises(InputError, match=r"odd\.jsonl, line 1: cannot tell the format .* give --format"):
        read_queries(path)
    with pytest.raises(InputError, match="does not exist"):
        read_queries(tmp_path / "missing.jsonl")


def test_json_records_read_lines_concatenated_values_and_arrays_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    pretty = '{\n  "a": 1\n}\n{\n  "a": 2\n}\n'
    assert list(json_records(path, pretty)) == [(1, {"a": 1}), (4, {"a": 2})]
    assert list(json_records(path, '[\n {"a": 1},\n {"a": 2}\n]')) == [(2, {"a": 1}), (3, {"a": 2})]
    assert list(json_records(path, "[]")) == []
    with pytest.raises(InputError, match="line 3: expected ',' or ']'"):
        list(json_records(path, '[\n {"a": 1}\n {"a": 2}\n]'))
    with pytest.raises(InputError, match="not closed"):
        list(json_records(path, '[{"a": 1},'))


def test_phoenix_span_rows_and_runs_without_trace_id_are_read(tmp_path: Path) -> None:
    # Phoenix's span frames as JSON lines: flat "attributes.*" and "context.*" columns, span_kind
    rows = [
        {
            "name": "q",
            "span_kind": "CHAIN",
            "parent_id": None,
            "context.trace_id": "t",
            "context.span_id": "a",
            "attributes.input.value": "root question",
        },
        {
            "name": "r",
            "span_kind": "RETRIEVER",
            "parent_id": "a",
            "context.trace_id": "t",
            "context.span_id": "b",
            "attributes.input.value": "retriever question",
        },
    ]
    read = read_queries(write(tmp_path / "phoenix.jsonl", rows))
    assert read.format == "otel" and [q.text for q in read.queries] == ["retriever question"]
    # old LangSmith exports without trace_id: the trace is the root of the dotted order
    runs = [
        {
            "id": "r1",
            "parent_run_id": None,
            "run_type": "chain",
            "dotted_order": "20261201T1Zr1",
            "inputs": {"question": "root"},
        },
        {
            "id": "r2",
            "parent_run_id": "r1",
            "run_type": "retriever",
            "dotted_order": "20261201T1Zr1.20261201T2Zr2",
            "inputs": {"query": "retrieved"},
        },
    ]
    assert [q.text for q in read_queries(write(tmp_path / "runs.jsonl", runs)).queries] == ["retrieved"]
