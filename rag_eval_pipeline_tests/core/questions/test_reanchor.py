"""Ground truth after a document edit: moved excerpts follow, lost ones make their question stale."""

import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample
from rag_eval_pipeline.core.questions.reanchor import (
    read_anchors,
    read_reanchored_jsonl,
    reanchor_examples,
    reanchor_span,
    write_anchors,
)
from rag_eval_pipeline.core.types import CharacterSpan, Document, DocumentId, QuestionId

PUMPS = "The main pump runs at 1,450 rpm. A pressure alarm fires above 7.5 bar. Service every 90 days."
VALVES = "Valve V-12 feeds the cooling loop. Relief valves are tested in March."


def span_of(doc_id: str, text: str, excerpt: str) -> CharacterSpan:
    start = text.index(excerpt)
    return CharacterSpan(DocumentId(doc_id), start, start + len(excerpt), excerpt)


def corpus_of(**docs: str) -> Corpus:
    return Corpus(tuple(Document(DocumentId(f"{k}.md"), v) for k, v in docs.items()))


def question(qid: str, *spans: CharacterSpan) -> TokenLevelExample:
    return TokenLevelExample(QuestionId(qid), f"question {qid}?", spans)


def test_excerpt_moved_by_an_insertion_is_reanchored_to_its_new_offsets():
    old = span_of("pumps.md", PUMPS, "A pressure alarm fires above 7.5 bar.")
    inserted = "It was installed in 2019. "
    edited = PUMPS.replace("A pressure", inserted + "A pressure")
    moved = reanchor_span(old, edited)
    assert moved is not None
    assert (moved.start, moved.end) == (old.start + len(inserted), old.end + len(inserted))
    assert edited[moved.start : moved.end] == old.text


def test_repeated_excerpt_goes_to_the_occurrence_nearest_the_old_offset():
    text = "alarm. " * 3 + "x" * 50 + "alarm. " + "y" * 50 + "alarm. "
    first_of_the_middle = text.index("alarm. ", 30)  # 71
    old = CharacterSpan(DocumentId("d.md"), first_of_the_middle - 4, first_of_the_middle + 3, "alarm. ")
    moved = reanchor_span(old, text)
    assert moved is not None and moved.start == first_of_the_middle  # not str.find's first copy at 0
    # equally far on both sides: the earlier one, deterministically
    assert reanchor_span(CharacterSpan(DocumentId("d"), 3, 4, "b"), "b.....b") == CharacterSpan(
        DocumentId("d"), 0, 1, "b"
    )
    assert reanchor_span(old, "no such text") is None


def test_examples_are_valid_reanchored_or_stale_with_a_reason():
    corpus = corpus_of(pumps=PUMPS, valves=VALVES)
    rpm = span_of("pumps.md", PUMPS, "The main pump runs at 1,450 rpm.")
    alarm = span_of("pumps.md", PUMPS, "A pressure alarm fires above 7.5 bar.")
    service = span_of("pumps.md", PUMPS, "Service every 90 days.")
    valve = span_of("valves.md", VALVES, "Valve V-12 feeds the cooling loop.")
    edited = corpus_of(
        # a sentence inserted before the alarm, the service sentence deleted; the rpm span unchanged
        pumps=PUMPS.replace("A pressure", "It was installed in 2019. A pressure").replace(
            " Service every 90 days.", ""
        ),
        valves=VALVES,
    )
    examples = [
        question("q-valid", rpm),
        question("q-moved", alarm),
        question("q-lost", service),
        question("q-half", valve, service),
        question("q-untouched", valve),
    ]
    result = reanchor_examples(examples, edited)
    assert [e.question_id for e in result.usable] == ["q-valid", "q-moved", "q-untouched"]
    assert result.usable[0] is examples[0] and result.usable[2] is examples[4]  # untouched objects
    (moved_span,) = result.usable[1].relevant_spans
    text = edited["pumps.md"].text
    assert text[moved_span.start : moved_span.end] == alarm.text and moved_span.start != alarm.start
    assert result.reanchored == {"q-moved"}
    assert [(s.example.question_id, s.reason) for s in result.stale] == [
        ("q-lost", "excerpt 'Service every 90 days.' no longer occurs in pumps.md"),
        ("q-half", "excerpt 'Service every 90 days.' no longer occurs in pumps.md"),
    ]
    assert result.stale[1].example is examples[3]  # stale rows keep the spans the dataset states
    assert (result.n_valid, result.n_reanchored, result.n_stale) == (2, 1, 2)
    assert [result.status(q) for q in ("q-valid", "q-moved", "q-lost")] == ["valid", "reanchored", "stale"]
    # unchanged corpus: nothing moves
    same = reanchor_examples(examples, corpus)
    assert same.usable == tuple(examples) and not same.reanchored and not same.stale


def test_a_removed_document_makes_its_questions_stale():
    valve = span_of("valves.md", VALVES, "Valve V-12 feeds the cooling loop.")
    result = reanchor_examples([question("q", valve)], corpus_of(pumps=PUMPS))
    assert [s.reason for s in result.stale] == ["document valves.md was removed"]
    assert result.usable == ()


def write_dataset(path: Path, *questions: tuple[str, list[CharacterSpan]]) -> Path:
    lines = [
        json.dumps(
            {
                "inputs": {"query": f"question {qid}?"},
                "outputs": {
                    "relevant_spans": [
                        {"doc_id": s.doc_id, "start": s.start, "end": s.end, "text": s.text} for s in spans
                    ]
                },
                "metadata": {"question_id": qid},
            }
        )
        for qid, spans in questions
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_loading_reanchors_only_documents_changed_since_the_ledger(tmp_path: Path):
    rpm = span_of("pumps.md", PUMPS, "The main pump runs at 1,450 rpm.")
    alarm = span_of("pumps.md", PUMPS, "A pressure alarm fires above 7.5 bar.")
    valve = span_of("valves.md", VALVES, "Valve V-12 feeds the cooling loop.")
    path = write_dataset(tmp_path / "golden.jsonl", ("q1", [rpm]), ("q2", [alarm]), ("q3", [valve]))
    original = corpus_of(pumps=PUMPS, valves=VALVES)

    first = read_reanchored_jsonl(path, original, {})  # no ledger yet: must match exactly
    assert len(first.dataset) == 3 and not first.result.stale and not first.result.reanchored
    assert first.anchors == {
        "pumps.md": original["pumps.md"].sha256,
        "valves.md": original["valves.md"].sha256,
    }
    write_anchors(tmp_path / "anchors.json", first.anchors)
    ledger = read_anchors(tmp_path / "anchors.json")
    assert ledger == first.anchors

    edited_pumps = PUMPS.replace("A pressure alarm fires above 7.5 bar.", "Alarms: see the panel.")
    edited = corpus_of(pumps="Intro. " + edited_pumps, valves=VALVES)
    # without the ledger the edit looks like a wrong dataset and fails as it always did
    with pytest.raises(DatasetError, match=r"line 1: field outputs.relevant_spans\[0\].text does not match"):
        read_reanchored_jsonl(path, edited, {})
    loaded = read_reanchored_jsonl(path, edited, ledger)
    assert [e.question_id for e in loaded.dataset] == ["q1", "q3"]
    assert loaded.result.reanchored == {"q1"} and [s.example.question_id for s in loaded.result.stale] == [
        "q2"
    ]
    # pumps.md's spans no longer all match as written: the ledger keeps the version they were written for
    assert loaded.anchors == ledger

    # a wrong text in a document that did not change still fails, naming the file, line and field
    typo = write_dataset(
        tmp_path / "typo.jsonl",
        ("q1", [rpm]),
        ("q3", [CharacterSpan(valve.doc_id, valve.start, valve.end, "Valve V-13 feeds the cooling loop.")]),
    )
    with pytest.raises(
        DatasetError,
        match=r"typo.jsonl, line 2: field outputs.relevant_spans\[0\].text does not match valves.md",
    ):
        read_reanchored_jsonl(typo, edited, ledger)


def test_ledger_moves_to_the_new_version_once_every_span_matches_it(tmp_path: Path):
    rpm = span_of("pumps.md", PUMPS, "The main pump runs at 1,450 rpm.")
    path = write_dataset(tmp_path / "golden.jsonl", ("q1", [rpm]))
    ledger = read_reanchored_jsonl(path, corpus_of(pumps=PUMPS), {}).anchors
    appended = corpus_of(pumps=PUMPS + " New last sentence.")  # the span still matches as written
    loaded = read_reanchored_jsonl(path, appended, ledger)
    assert loaded.result.n_valid == 1 and loaded.anchors == {"pumps.md": appended["pumps.md"].sha256}


def test_a_removed_document_is_stale_only_when_the_ledger_knew_it(tmp_path: Path):
    valve = span_of("valves.md", VALVES, "Valve V-12 feeds the cooling loop.")
    rpm = span_of("pumps.md", PUMPS, "The main pump runs at 1,450 rpm.")
    path = write_dataset(tmp_path / "golden.jsonl", ("q1", [rpm]), ("q2", [valve]))
    ledger = read_reanchored_jsonl(path, corpus_of(pumps=PUMPS, valves=VALVES), {}).anchors
    without_valves = corpus_of(pumps=PUMPS)
    loaded = read_reanchored_jsonl(path, without_valves, ledger)
    assert [(s.example.question_id, s.reason) for s in loaded.result.stale] == [
        ("q2", "document valves.md was removed")
    ]
    with pytest.raises(DatasetError, match=r"line 2: .*doc_id 'valves.md' is not a document of the corpus"):
        read_reanchored_jsonl(path, without_valves, {})


def test_a_changed_document_still_refuses_spans_no_edit_explains(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    span = {"doc_id": "pumps.md", "start": 4, "end": 9, "text": "main pump"}  # 5 offsets, 9 characters
    path.write_text(
        json.dumps({"inputs": {"query": "q?"}, "outputs": {"relevant_spans": [span]}}) + "\n",
        encoding="utf-8",
    )
    ledger = {DocumentId("pumps.md"): "0" * 64}  # pumps.md changed since
    with pytest.raises(DatasetError, match=r"bad.jsonl, line 1: .*its text has 9 characters for 5 offsets"):
        read_reanchored_jsonl(path, corpus_of(pumps=PUMPS), ledger)


def test_a_broken_ledger_says_to_delete_it(tmp_path: Path):
    ledger = tmp_path / "anchors.json"
    assert read_anchors(ledger) == {}
    ledger.write_text('{"documents": ["a.md"]}', encoding="utf-8")
    with pytest.raises(DatasetError, match="anchors.json is not an anchor ledger.*delete it"):
        read_anchors(ledger)
