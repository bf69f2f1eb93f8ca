"""`rag-eval queries import|list` in a workspace: every example format, malformed files refused whole
(exit 2 naming the line), personal data refused / redacted / allowed, re-imports that do not double."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.judging.store import JudgingStore

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples" / "queries"
RAW_EVENTS = "How long do we keep raw events?"


def stored(project: Path) -> list[tuple[str, int]]:
    return [(q.text, q.count) for q in JudgingStore(project / "data" / "judging").read_queries()]


@pytest.mark.parametrize(
    ("name", "chosen", "summary", "expected"),
    [
        (
            "queries.csv",
            "format csv, chosen by --format auto: the extension .csv",
            "4 queries from this file after merging 0 duplicate(s) and 2 near-duplicate(s)",
            [(RAW_EVENTS, 15), ("Who is on call this weekend?", 7), ("How do I roll back a release?", 6)],
        ),
        (
            "queries.jsonl",
            "format jsonl, chosen by --format auto: its first record has a query field",
            "4 queries from this file after merging 0 duplicate(s) and 2 near-duplicate(s)",
            [(RAW_EVENTS, 15), ("Who is on call this weekend?", 7), ("How do I roll back a release?", 6)],
        ),
        (
            "langsmith_runs.jsonl",
            "format langsmith, chosen by --format auto: its first record is a run with run_type",
            "3 queries from this file",
            [("How do I roll back a release?", 1), ("Who is on call this weekend?", 1), (RAW_EVENTS, 1)],
        ),
        (
            "otel_spans.jsonl",
            "format otel, chosen by --format auto: its first record is a span with attributes",
            "3 queries from this file",
            [("How do I roll back a release?", 1), ("Who is on call this weekend?", 1), (RAW_EVENTS, 1)],
        ),
    ],
)
def test_import_of_each_example_stores_its_merged_queries(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    chosen: str,
    summary: str,
    expected: list[tuple[str, int]],
) -> None:
    assert main(["queries", "import", str(EXAMPLES / name)]) == 0
    out = capsys.readouterr().out
    assert "read 6 " in out and str(EXAMPLES / name) in out and chosen in out
    assert summary in out
    assert stored(project)[:3] == expected
    if name.startswith(("langsmith", "otel")):
        assert "skipped, as not a trace's query: 3 not a retriever" in out


def test_the_format_given_is_used_and_said(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = project / "runs.txt"  # an extension auto would not know
    shutil.copy(EXAMPLES / "langsmith_runs.jsonl", copy)
    assert main(["queries", "import", str(copy), "--format", "langsmith"]) == 0
    assert "(format langsmith, as given)" in capsys.readouterr().out
    assert main(["queries", "import", str(copy), "--format", "otel"]) == 2
    assert "runs.txt, line 1: the root" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("bad.jsonl", '{"query": "fine"}\n{"query": "broken\n', "bad.jsonl, line 2: not valid JSON"),
        ("bad.csv", "query,count\nfine,1\n,3\n", "bad.csv, line 3: field query is missing"),
        (
            "runs.jsonl",
            json.dumps({"id": "r", "parent_run_id": None, "run_type": "retriever", "inputs": {}}) + "\n",
            "runs.jsonl, line 1: the retriever run holds no query: field inputs",
        ),
        (
            "spans.jsonl",
            '{"name": "ok", "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": "fine"}}\n'
            '{"name": "r", "attributes": {"openinference.span.kind": "RETRIEVER"}}\n',
            "spans.jsonl, line 2: the retriever span holds no query: attribute input.value is missing",
        ),
    ],
)
def test_a_malformed_file_exits_2_naming_the_line_and_stores_nothing(
    project: Path, capsys: pytest.CaptureFixture[str], name: str, content: str, expected: str
) -> None:
    path = project / name
    path.write_text(content, encoding="utf-8")
    assert main(["queries", "import", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and expected in err
    assert not (project / "data" / "judging").exists()


PII_CSV = """query,count
my email is jane.doe@example.com why can't I log in,2
my email is sam@example.org why can't I log in,1
How long do we keep raw events?,4
"""


def test_personal_data_is_refused_by_default_and_masked_in_what_is_printed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / "pii.csv"
    path.write_text(PII_CSV, encoding="utf-8")
    assert main(["queries", "import", str(path)]) == 2
    captured = capsys.readouterr()
    assert "jane.doe@example.com" not in captured.out + captured.err
    assert 'pii.csv, line 2: "my email is [e-mail] why can\'t I log in" (e-mail)' in captured.err
    assert "2 queries of" in captured.err and "nothing was stored" in captured.err
    assert "--redact-pii" in captured.err and "--allow-pii" in captured.err
    assert not (project / "data" / "judging").exists()


def test_redact_pii_stores_the_markers_and_merges_what_became_equal(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / "pii.csv"
    path.write_text(PII_CSV, encoding="utf-8")
    assert main(["queries", "import", str(path), "--redact-pii"]) == 0
    out = capsys.readouterr().out
    assert "2 flagged for personal data, redacted (--redact-pii)" in out
    assert "1 duplicate(s)" in out  # the two e-mails became one text
    assert stored(project) == [(RAW_EVENTS, 4), ("my email is [e-mail] why can't I log in", 3)]
    judging = project / "data" / "judging"
    assert not any("example.com" in p.read_text() for p in judging.iterdir() if p.suffix == ".jsonl")


def test_allow_pii_stores_the_text_as_is_marked_with_what_was_found(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / "pii.csv"
    path.write_text(PII_CSV, encoding="utf-8")
    assert main(["queries", "import", str(path), "--allow-pii"]) == 0
    assert "stored as they are and marked (--allow-pii)" in capsys.readouterr().out
    queries = {q.text: q for q in JudgingStore(project / "data" / "judging").read_queries()}
    flagged = queries["my email is jane.doe@example.com why can't I log in"]
    assert flagged.pii == ("e-mail",) and flagged.count == 2
    assert queries["my email is sam@example.org why can't I log in"].pii == ("e-mail",)  # two addresses: two
    assert queries[RAW_EVENTS].pii == ()
    with pytest.raises(SystemExit) as usage:  # one or the other
        main(["queries", "import", str(path), "--allow-pii", "--redact-pii"])
    assert usage.value.code == 2


def test_importing_a_file_again_does_not_double_its_counts(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = project / "logs" / "queries.csv"
    copy.parent.mkdir()
    shutil.copy(EXAMPLES / "queries.csv", copy)
    assert main(["queries", "import", str(copy)]) == 0
    first = stored(project)
    assert main(["queries", "import", "logs/queries.csv"]) == 0  # the same file, named relative to the cwd
    out = capsys.readouterr().out
    assert "replacing this file's earlier import: 6 text(s)" in out
    assert stored(project) == first
    assert main(["queries", "import", str(EXAMPLES / "langsmith_runs.jsonl")]) == 0  # another file adds
    assert dict(stored(project))[RAW_EVENTS] == 16
    assert "stored 4 queries, total traffic 33" in capsys.readouterr().out


def test_list_shows_the_stored_queries_most_asked_first(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queries", "list"]) == 1
    assert "no queries imported yet" in capsys.readouterr().err
    assert main(["queries", "import", str(EXAMPLES / "queries.jsonl")]) == 0
    capsys.readouterr()
    assert main(["queries", "list", "--limit", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("4 queries, total traffic 30 (") and out[0].endswith("; the 2 most asked)")
    assert out[1].split() == ["query_id", "count", "text", "variants", "pii"]
    assert out[3].startswith("q-") and "15" in out[3] and RAW_EVENTS in out[3]
    assert "how long do we keep raw events" in out[3]  # its variant
    assert "Who is on call this weekend?" in out[4] and out[-1] == "(2 rows)"
    assert main(["queries", "list", "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["count"] for r in records] == [15, 7, 6, 2]
    assert records[2]["variants"] == ["How do I roll back a release please?"]
    assert set(records[0]) == {"query_id", "count", "text", "variants", "pii"}
