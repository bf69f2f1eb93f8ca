"""Real queries read from the files teams already have: a plain list, a LangSmith runs export, or an
OpenTelemetry / OpenInference span export. Each format gives ``RawQuery`` records (text, times asked,
where); merging and storing them is core/judging/query_merge.py's job.

Formats (examples under ``data/examples/queries/``):

- ``jsonl``: one object a line, ``{"query": "...", "count": 3, "id": "..."}``. ``query`` is required;
  ``count`` or ``weight`` (not both) is how often it was asked, a positive whole number, default 1;
  ``id`` is the log's own id, kept in the query's sources. Other fields are ignored (and named in the
  summary, so a misspelt ``cuont`` does not go unseen).
- ``csv``: the same as columns, a header row first (``query`` required).
- ``langsmith``: runs as the LangSmith SDK's ``Client.list_runs`` gives them (``run.dict()`` or
  ``run.json()`` of each run), as JSON lines or one JSON array. One query per trace (``trace_id``):
  the ``inputs`` of its first run with ``run_type`` ``retriever`` (first by ``dotted_order``, then
  ``start_time``, then file order): the query as the retriever got it, which is what the retrieval
  is evaluated on. A trace with no retriever run gives its root run's inputs (no ``parent_run_id``).
  The query in ``inputs`` is, first that holds a non-empty string: ``query``, ``question``, ``input``,
  ``user_input``, ``prompt``, ``text`` (also one level down, e.g. ``{"input": {"question": ...}}``);
  else the last user message of ``messages``; else the only string among the inputs.
- ``otel``: spans as JSON lines, either flat (``{"name": ..., "attributes": {...}, "context":
  {"trace_id": ...}, "parent_id": ...}``, as the OpenTelemetry SDK's console exporter and Phoenix
  write them, attributes flat with dotted keys or nested) or OTLP/JSON (``{"resourceSpans": [{"scopeSpans":
  [{"spans": [{"traceId": ..., "attributes": [{"key": ..., "value": {"stringValue": ...}}]}]}]}]}``, as
  the OpenTelemetry Collector's file exporter writes them). OpenInference conventions: the span whose
  ``openinference.span.kind`` is ``RETRIEVER``, its query in ``input.value`` (a JSON object when
  ``input.mime_type`` is ``application/json``: then its query key, chosen as for LangSmith). One query per
  trace as for LangSmith; a trace with no retriever span gives its root span's ``input.value``.

Records that are not a trace's query (LLM, chain and tool runs or spans; a trace's second retriever
run) are skipped and counted, never an error. A record that should hold a query and does not (a jsonl
line with no ``query``, a retriever run with no query in its inputs, a line that is not JSON) is an
``InputError`` naming the file, the line and the field: nothing of the file is imported.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError

QueryFormat = Literal["jsonl", "csv", "langsmith", "otel"]
QUERY_FORMATS: tuple[QueryFormat, ...] = ("jsonl", "csv", "langsmith", "otel")
# The keys of a run's inputs (or a JSON input.value) that hold its query, in the order tried.
QUERY_KEYS = ("query", "question", "input", "user_input", "prompt", "text")
PLAIN_FIELDS = frozenset({"query", "count", "weight", "id"})
RETRIEVER_SPAN_KIND = "RETRIEVER"


@dataclass(frozen=True)
class RawQuery:
    """One query as a file states it: its text (stripped), how often it was asked, where."""

    text: str
    count: int
    line: int
    record_id: str | None = None  # the log's id of the line (jsonl/csv id, run or span id)

    @property
    def place(self) -> str:
        """Where it was read, as stored in a query's sources: "3" or "3 id=q-17"."""
        return f"{self.line} id={self.record_id}" if self.record_id else str(self.line)


@dataclass(frozen=True)
class ReadQueries:
    """What a file gave: its queries, how many records were read, and why some were passed over."""

    path: Path
    format: QueryFormat
    chosen_because: str  # "" when the format was given; else why --format auto chose it
    records: int  # lines (jsonl, csv rows) or runs/spans read
    queries: tuple[RawQuery, ...]
    skipped: Mapping[str, int] = field(default_factory=dict)  # reason -> records passed over
    ignored_fields: tuple[str, ...] = ()  # fields of a plain list that are not query/count/weight/id


def read_queries(path: Path, fmt: QueryFormat | Literal["auto"] = "auto") -> ReadQueries:
    """The queries of ``path`` in format ``fmt`` (``auto``: decided from the extension and the first
    record; the reason is in ``chosen_because``)."""
    text = _read_text(path)
    because = ""
    if fmt == "auto":
        fmt, because = detect_format(path, text)
    if fmt == "csv":
        return _read_csv(path, text, because)
    records = list(json_records(path, text))
    if not records:
        raise InputError(f"{path} holds no records; export the queries first")
    if fmt == "jsonl":
        return _read_plain_jsonl(path, records, because)
    if fmt == "langsmith":
        return _read_langsmith(path, records, because)
    return _read_otel(path, records, because)


def detect_format(path: Path, text: str) -> tuple[QueryFormat, str]:
    """The format of a file: CSV by its extension (or a first line that is not JSON), else by the keys
    of its first JSON record: ``resourceSpans`` or span attributes -> otel, ``run_type`` -> langsmith,
    ``query`` -> jsonl."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv", f"the extension {suffix}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first.startswith(("{", "[")):
        return "csv", "its first line is not JSON (a header row)"
    records = json_records(path, text)
    line, obj = next(records, (0, None))
    if not isinstance(obj, dict):
        raise InputError(
            f"{path}, line {line}: expected a JSON object; give --format to say what the file is"
        )
    keys = set(obj)
    if keys & {"resourceSpans", "resource_spans"}:
        return "otel", "its first record holds resourceSpans (OTLP/JSON)"
    attributes = obj.get("attributes")
    if isinstance(attributes, dict | list) or any(k.startswith("attributes.") for k in keys):
        return "otel", "its first record is a span with attributes"
    if "run_type" in keys:
        return "langsmith", "its first record is a run with run_type"
    if "query" in keys:
        return "jsonl", "its first record has a query field"
    raise InputError(
        f"{path}, line {line}: cannot tell the format from the first record (fields "
        f"{', '.join(sorted(keys)) or 'none'}); give --format jsonl|csv|langsmith|otel"
    )


# --- JSON records -------------------------------------------------------------------------------------


def json_records(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line, value) of every JSON value of ``text``: JSON lines, values one after another (pretty
    printed, as the console span exporter writes them), or the elements of one top-level array. The
    line is where the value starts; a value that does not parse is an ``InputError`` naming it."""
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0)
    in_array = text.startswith("[", at)
    if in_array:
        at = _skip_space(text, at + 1)
        if text.startswith("]", at):
            return
    line, counted = 1, 0  # newlines counted up to ``counted``: each value's line costs only its own text
    while at < len(text):
        line, counted = line + text.count("\n", counted, at), at
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{path}, line {line}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                "fix or delete the line"
            ) from None
        yield line, value
        at = _skip_space(text, at)
        if in_array:
            if text.startswith(",", at):
                at = _skip_space(text, at + 1)
            elif text.startswith("]", at):
                if _skip_space(text, at + 1) < len(text):
                    raise InputError(
                        f"{path}, line {line + text.count(chr(10), counted, at)}: text after the JSON array"
                    )
                return
            else:
                raise InputError(
                    f"{path}, line {line + text.count(chr(10), counted, at)}: expected ',' or ']' between the "
                    "elements of the JSON array"
                )
    if in_array:
        raise InputError(f"{path}: the JSON array is not closed (no final ']')")


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a BOM from a spreadsheet export is not text
    except FileNotFoundError:
        raise InputError(f"query file {path} does not exist") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder; give the file of queries") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


# --- a plain list: jsonl and csv ---------------------------------------------------------------------


def _read_plain_jsonl(path: Path, records: Sequence[tuple[int, Any]], because: str) -> ReadQueries:
    queries = []
    ignored: set[str] = set()
    for line, obj in records:
        if not isinstance(obj, dict):
            raise InputError(f"{path}, line {line}: expected a JSON object with a query field")
        ignored |= set(obj) - PLAIN_FIELDS
        queries.append(_plain_query(path, line, obj))
    _check_ids(path, queries)
    return ReadQueries(path, "jsonl", because, len(records), tuple(queries), {}, tuple(sorted(ignored)))


def _read_csv(path: Path, text: str, because: str) -> ReadQueries:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)  # an unclosed quote is an error
    columns = [(name or "").strip() for name in reader.fieldnames or ()]
    if "query" not in columns:
        raise InputError(
            f"{path}, line 1: no query column (columns: {', '.join(c for c in columns if c) or 'none'}); "
            "the header row must name a query column (and optionally count or weight, id)"
        )
    queries = []
    read_to = reader.line_num  # the last line of the rows read: a bad record starts after it
    try:
        for raw in reader:
            line = read_to = reader.line_num
            row = {(k or "").strip(): v for k, v in raw.items() if k is not None}
            if None in raw:
                raise InputError(f"{path}, line {line}: more cells than the header has columns")
            cells = {k: v.strip() for k, v in row.items() if isinstance(v, str) and v.strip()}
            queries.append(_plain_query(path, line, {k: v for k, v in cells.items() if k in PLAIN_FIELDS}))
    except csv.Error as exc:
        raise InputError(f"{path}, line {read_to + 1}: malformed CSV ({exc})") from None
    if not queries:
        raise InputError(f"{path} holds a header and no queries")
    _check_ids(path, queries)
    ignored = tuple(sorted(set(columns) - PLAIN_FIELDS - {""}))
    return ReadQueries(path, "csv", because, len(queries), tuple(queries), {}, ignored)


def _plain_query(path: Path, line: int, obj: Mapping[str, Any]) -> RawQuery:
    text = obj.get("query")
    if not isinstance(text, str) or not text.strip():
        raise InputError(
            f"{path}, line {line}: field query is {'empty' if isinstance(text, str) else 'missing' if text is None else 'not text'}; "
            "every line needs the query as asked (delete the line if it has none)"
        )
    if "count" in obj and "weight" in obj:
        raise InputError(f"{path}, line {line}: fields count and weight are both given; keep one")
    name = "count" if "count" in obj else "weight"
    count = _times_asked(obj.get(name, 1))
    if count is None:
        raise InputError(
            f"{path}, line {line}: field {name} is {obj.get(name)!r}; it must be a positive whole number "
            "(the times the query was asked)"
        )
    record_id = obj.get("id")
    if record_id is not None and not isinstance(record_id, str | int):
        raise InputError(f"{path}, line {line}: field id must be text or a number")
    return RawQuery(text.strip(), count, line, None if record_id is None else str(record_id))


def _times_asked(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and value >= 1 and float(value).is_integer():
        return int(value)
    return None


def _check_ids(path: Path, queries: Sequence[RawQuery]) -> None:
    seen: dict[str, RawQuery] = {}
    for query in queries:
        if query.record_id is None:
            continue
        first = seen.setdefault(query.record_id, query)
        if first is not query and first.text != query.text:
            raise InputError(
                f"{path}, line {query.line}: field id {query.record_id!r} already names another query on line "
                f"{first.line}; give each query its own id"
            )


# --- traces: LangSmith runs and OpenTelemetry spans ----------------------------------------------------


@dataclass(frozen=True)
class _TraceRecord:
    """A run or a span, reduced to what choosing a trace's query needs."""

    line: int
    where: str  # "line 3" or "line 1, span 4"
    trace: str
    order: tuple[str, str]  # (dotted_order or "", start time as text): sorts the records of a trace
    position: int  # file order, the last tie-break
    is_retriever: bool
    is_root: bool
    record_id: str | None
    query: str | None  # None: the record holds no query
    problem: str  # why query is None, naming the field


def _one_query_per_trace(
    path: Path, fmt: QueryFormat, records: list[_TraceRecord], read: int, because: str, kind: str
) -> ReadQueries:
    traces: dict[str, list[_TraceRecord]] = {}
    for record in records:
        traces.setdefault(record.trace, []).append(record)
    chosen: list[_TraceRecord] = []
    skipped = {
        f"not a retriever {kind}": 0,
        f"a further retriever {kind} of a trace": 0,
        "traces with no retriever and no root": 0,
    }
    for members in traces.values():
        members.sort(key=lambda r: (r.order, r.position))
        retrievers = [r for r in members if r.is_retriever]
        roots = [r for r in members if r.is_root]
        pick = retrievers[0] if retrievers else roots[0] if roots else None
        if pick is None:
            skipped["traces with no retriever and no root"] += 1
            skipped[f"not a retriever {kind}"] += len(members)
            continue
        chosen.append(pick)
        skipped[f"a further retriever {kind} of a trace"] += max(len(retrievers) - 1, 0)
        skipped[f"not a retriever {kind}"] += len(members) - len(retrievers) - (0 if retrievers else 1)
    chosen.sort(key=lambda r: r.position)
    queries = []
    for record in chosen:
        if record.query is None:
            role = "the retriever" if record.is_retriever else "the root (its trace has no retriever)"
            raise InputError(
                f"{path}, {record.where}: {role} {kind} holds no query: {record.problem}; a trace's query is "
                f"its retriever's input, or its root's when it has no retriever"
            )
        queries.append(RawQuery(record.query, 1, record.line, record.record_id))
    return ReadQueries(path, fmt, because, read, tuple(queries), {k: v for k, v in skipped.items() if v})


def _read_langsmith(path: Path, records: Sequence[tuple[int, Any]], because: str) -> ReadQueries:
    runs = []
    for position, (line, run) in enumerate(records):
        where = f"line {line}"
        if not isinstance(run, dict):
            raise InputError(f"{path}, {where}: expected a run (a JSON object with run_type and inputs)")
        run_type = run.get("run_type")
        if not isinstance(run_type, str):
            raise InputError(
                f"{path}, {where}: field run_type is missing; is this a LangSmith runs export "
                "(list_runs)? Give --format if not"
            )
        run_id = _text_or_none(run.get("id"))
        parent = run.get("parent_run_id")
        inputs = run.get("inputs")
        query, problem = (None, "field inputs is missing or not an object")
        if isinstance(inputs, dict):
            query, problem = query_in(inputs, "inputs")
        runs.append(
            _TraceRecord(
                line,
                where,
                _text_or_none(run.get("trace_id"))
                or _dotted_root(run.get("dotted_order"))
                or run_id
                or where,
                (str(run.get("dotted_order") or ""), str(run.get("start_time") or "")),
                position,
                run_type == "retriever",
                parent is None,
                run_id,
                query,
                problem,
            )
        )
    return _one_query_per_trace(path, "langsmith", runs, len(records), because, "run")


def _dotted_root(dotted_order: Any) -> str | None:
    """The root run's id from a dotted order ``<time>Z<run id>.<time>Z<run id>...``."""
    if not isinstance(dotted_order, str) or "Z" not in dotted_order:
        return None
    return dotted_order.split(".", 1)[0].split("Z", 1)[1] or None


def _read_otel(path: Path, records: Sequence[tuple[int, Any]], because: str) -> ReadQueries:
    spans: list[_TraceRecord] = []
    for line, obj in records:
        if not isinstance(obj, dict):
            raise InputError(f"{path}, line {line}: expected a span or an OTLP/JSON export (a JSON object)")
        otlp = obj.get("resourceSpans", obj.get("resource_spans"))
        if otlp is not None:
            for number, span in enumerate(_otlp_spans(path, line, otlp), start=1):
                spans.append(_otlp_span(path, line, f"line {line}, span {number}", span, len(spans)))
        else:
            spans.append(_flat_span(path, line, obj, len(spans)))
    return _one_query_per_trace(path, "otel", spans, len(spans), because, "span")


def _otlp_spans(path: Path, line: int, resource_spans: Any) -> Iterator[Mapping[str, Any]]:
    if not isinstance(resource_spans, list):
        raise InputError(f"{path}, line {line}: field resourceSpans must be a list")
    for resource in resource_spans:
        scopes = (
            resource.get("scopeSpans", resource.get("scope_spans", []))
            if isinstance(resource, dict)
            else None
        )
        if not isinstance(scopes, list):
            raise InputError(f"{path}, line {line}: resourceSpans[].scopeSpans must be a list")
        for scope in scopes:
            spans = scope.get("spans", []) if isinstance(scope, dict) else None
            if not isinstance(spans, list):
                raise InputError(f"{path}, line {line}: scopeSpans[].spans must be a list")
            for span in spans:
                if not isinstance(span, dict):
                    raise InputError(f"{path}, line {line}: a span must be a JSON object")
                yield span


def _otlp_span(path: Path, line: int, where: str, span: Mapping[str, Any], position: int) -> _TraceRecord:
    attributes = span.get("attributes", [])
    if not isinstance(attributes, list):
        raise InputError(f"{path}, {where}: field attributes must be a list of {{key, value}} (OTLP/JSON)")
    flat: dict[str, Any] = {}
    for attribute in attributes:
        if not isinstance(attribute, dict) or not isinstance(attribute.get("key"), str):
            raise InputError(f'{path}, {where}: an attribute must be {{"key": ..., "value": {{...}}}}')
        flat[attribute["key"]] = _any_value(attribute.get("value"))
    trace = _text_or_none(span.get("traceId", span.get("trace_id")))
    parent = span.get("parentSpanId", span.get("parent_span_id"))
    return _span_record(
        line,
        where,
        flat,
        trace,
        not parent,
        _text_or_none(span.get("spanId", span.get("span_id"))),
        str(span.get("startTimeUnixNano", span.get("start_time_unix_nano", ""))).rjust(20, "0"),
        position,
    )


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue (``{"stringValue": "..."}``, ``{"intValue": "3"}``, arrays, key-value lists) as
    plain JSON."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {
            kv.get("key"): _any_value(kv.get("value"))
            for kv in (value["kvlistValue"] or {}).get("values", [])
        }
    return None


def _flat_span(path: Path, line: int, span: Mapping[str, Any], position: int) -> _TraceRecord:
    where = f"line {line}"
    attributes = span.get("attributes", {})
    if not isinstance(attributes, dict):
        raise InputError(f"{path}, {where}: field attributes must be an object")
    flat = dict(_flatten(attributes))
    for key, value in span.items():  # Phoenix's span frames: "attributes.input.value" columns
        if key.startswith("attributes."):
            flat.setdefault(key.removeprefix("attributes."), value)
    if "openinference.span.kind" not in flat and isinstance(span.get("span_kind"), str):
        flat["openinference.span.kind"] = span["span_kind"]
    raw_context = span.get("context")
    context: Mapping[str, Any] = raw_context if isinstance(raw_context, dict) else {}
    trace = _text_or_none(context.get("trace_id", span.get("trace_id", span.get("context.trace_id"))))
    span_id = _text_or_none(context.get("span_id", span.get("span_id", span.get("context.span_id"))))
    parent = span.get("parent_id", span.get("parent_span_id"))
    return _span_record(
        line, where, flat, trace, not parent, span_id, str(span.get("start_time") or ""), position
    )


def _flatten(attributes: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in attributes.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _span_record(
    line: int,
    where: str,
    attributes: Mapping[str, Any],
    trace: str | None,
    is_root: bool,
    span_id: str | None,
    start: str,
    position: int,
) -> _TraceRecord:
    kind = attributes.get("openinference.span.kind")
    query, problem = _span_query(attributes)
    return _TraceRecord(
        line,
        where,
        trace or span_id or where,
        ("", start),
        position,
        isinstance(kind, str) and kind.upper() == RETRIEVER_SPAN_KIND,
        is_root,
        span_id,
        query,
        problem,
    )


def _span_query(attributes: Mapping[str, Any]) -> tuple[str | None, str]:
    value = attributes.get("input.value")
    if value is None:
        return None, "attribute input.value is missing"
    if isinstance(value, str) and not value.strip():
        return None, "attribute input.value is empty"
    mime = attributes.get("input.mime_type")
    if isinstance(value, str) and (mime == "application/json" or value.lstrip().startswith("{")):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            if mime == "application/json":
                return None, "attribute input.value is not the JSON its input.mime_type says"
            parsed = None
        if isinstance(parsed, dict):
            return query_in(parsed, "input.value")
    if not isinstance(value, str):
        return None, "attribute input.value is not text"
    return value.strip(), ""


def query_in(inputs: Mapping[str, Any], name: str) -> tuple[str | None, str]:
    """The query among a run's inputs (or a JSON ``input.value``): the first of ``QUERY_KEYS`` holding
    a non-empty string (also one level down), else the last user message of ``messages``, else the
    only string; ``(None, why)`` when there is none."""
    for container in (inputs, *(v for k, v in inputs.items() if k in QUERY_KEYS and isinstance(v, dict))):
        for key in QUERY_KEYS:
            value = container.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip(), ""
    message = _last_user_message(inputs.get("messages"))
    if message:
        return message, ""
    strings = [v.strip() for v in inputs.values() if isinstance(v, str) and v.strip()]
    if len(strings) == 1:
        return strings[0], ""
    return None, (
        f"field {name} has none of {', '.join(QUERY_KEYS)}, no user message and "
        f"{'several' if strings else 'no'} other text (keys: {', '.join(sorted(map(str, inputs))) or 'none'})"
    )


def _last_user_message(messages: Any) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        while isinstance(message, list) and message:  # LangChain batches: [[message, ...]]
            message = message[-1]
        if not isinstance(message, dict):
            continue
        role = message.get("role", message.get("type"))
        content = message.get("content")
        if isinstance(message.get("kwargs"), dict):  # a serialised LangChain message
            kwargs = message["kwargs"]
            role = (
                "human"
                if any("HumanMessage" in str(i) for i in message.get("id", []))
                else kwargs.get("type")
            )
            content = kwargs.get("content")
        if role in ("user", "human") and isinstance(content, str) and content.strip():
            return content.strip()
    return None


def _text_or_none(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int) and str(value) else None
