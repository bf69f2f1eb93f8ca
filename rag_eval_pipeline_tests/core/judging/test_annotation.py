"""The rules of the annotation page without a browser: the queue, passages in context, progress and
resuming, and a save checked against what was shown and the documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.judging.annotation import (
    AnnotationError,
    build_work,
    check_judge_name,
    first_unjudged,
    judgement_from_request,
    progress,
    unread_first,
    unread_passages,
)
from rag_eval_pipeline.core.judging.annotation_source import AnnotationSource
from rag_eval_pipeline.core.judging.hole_focus import FocusQuery, HoleFocus
from rag_eval_pipeline.core.judging.types import Judgement, JudgeName, query_id_for
from rag_eval_pipeline.core.types import Document

from .annotation_fixtures import (
    ALARM_LINE,
    DOCS,
    NIGHT_ID,
    NIGHT_LINE,
    NOTES,
    PUMP_ID,
    PUMP_LINE,
    PUMPS,
    STAFF,
    corpus,
    passage,
    pool,
    queries,
    span_of,
    write_judging_files,
)

AT = "2026-12-02T10:00:00Z"


def work():  # type: ignore[no-untyped-def]
    return build_work(queries(), pool(), corpus())


def request(
    query_id: str, verdict: str, spans: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    task = work().tasks[work().index_of(query_id)]
    shown = [
        {"doc_id": p.doc_id, "start": p.start, "end": p.end, "document_sha256": p.document_sha256}
        for p in task.passages
    ]
    return {
        "annotator": "ann",
        "query_id": query_id,
        "verdict": verdict,
        "spans": spans or [],
        "shown": shown,
        **extra,
    }


def span_json(doc_id: str, text: str) -> dict[str, Any]:
    span = span_of(doc_id, text)  # type: ignore[arg-type]
    return {"doc_id": span.doc_id, "start": span.start, "end": span.end, "text": span.text}


def test_the_queue_holds_the_pooled_queries_in_import_order_with_passages_in_document_order() -> None:
    tasks = work().tasks
    assert [t.query.query_id for t in tasks] == [PUMP_ID, NIGHT_ID]  # the unpooled query is not asked
    assert [p.text for p in tasks[0].passages] == [PUMP_LINE, ALARM_LINE]
    assert [p.doc_id for p in tasks[1].passages] == [STAFF, NOTES]


def test_a_passage_is_shown_in_its_document_with_whole_words_of_context() -> None:
    shown = work().tasks[0].passages[0]
    text = DOCS[PUMPS]
    assert text[shown.start : shown.end] == shown.text == PUMP_LINE
    assert shown.before == text[shown.context_start : shown.start] == "# Pumps\n\n"
    assert text[shown.end : shown.context_end] == shown.after
    assert shown.document_characters == len(text)
    narrow = build_work(queries(), pool(), corpus(), context=5).tasks[0].passages[0]
    assert narrow.before == "\n"  # "# Pumps" would be cut inside a word: left out
    assert narrow.after == "\n\n##"  # "Alarms" would be cut: left out
    assert text[narrow.context_start : narrow.context_end] == narrow.before + narrow.text + narrow.after


def test_passages_whose_contexts_meet_are_shown_in_one_excerpt_of_their_document() -> None:
    pump, night = work().tasks
    (excerpt,) = pump.excerpts  # the two pump passages are 13 characters apart: one excerpt
    assert excerpt.doc_id == PUMPS
    assert "".join(p.text for p in excerpt.pieces) == DOCS[PUMPS][excerpt.start : excerpt.end]
    assert [p.passage for p in excerpt.pieces] == [None, 0, None, 1, None]
    assert [p.text for p in excerpt.pieces if p.passage is not None] == [PUMP_LINE, ALARM_LINE]
    assert [e.doc_id for e in night.excerpts] == [STAFF, NOTES]  # other documents: other excerpts
    apart = build_work(queries(), pool(), corpus(), context=5).tasks[0]
    assert len(apart.excerpts) == 2  # with less context the passages no longer meet


def test_overlapping_passages_keep_their_own_excerpts() -> None:
    overlapping = [passage(PUMP_ID, PUMPS, PUMP_LINE), passage(PUMP_ID, PUMPS, "1,450 rpm and is serviced")]
    (task,) = build_work(queries(), overlapping, corpus()).tasks
    assert len(task.excerpts) == 2
    for excerpt in task.excerpts:
        assert "".join(p.text for p in excerpt.pieces) == DOCS[PUMPS][excerpt.start : excerpt.end]


def test_a_passage_whose_document_changed_since_pooling_is_left_out_and_said() -> None:
    edited = corpus()
    changed = type(edited)(
        tuple(Document(d.doc_id, "Edited.\n" + d.text) if d.doc_id == NOTES else d for d in edited)
    )
    orphan = passage(query_id_for("never imported"), PUMPS, PUMP_LINE)
    built = build_work(queries(), [*pool(), orphan], changed)
    assert [p.doc_id for p in built.tasks[1].passages] == [STAFF]
    assert any(
        f"query {NIGHT_ID}: 1 pooled passage(s) no longer read" in p and "pool again" in p
        for p in built.problems
    )
    assert any("queries.jsonl does not hold" in p for p in built.problems)


def judged(judge: str, query_id: str, kind: str = "human", passages: Any = None) -> Judgement:
    """A judgement that read the passages of the query's task (or ``passages``) as pooled now."""
    queue = work()
    read = passages if passages is not None else queue.tasks[queue.index_of(query_id)].passages
    documents = {p.doc_id: p.document_sha256 for p in read}
    return Judgement(
        query_id, JudgeName(judge), kind, "not-answerable", (), tuple(p.span for p in read), AT, documents
    )  # type: ignore[arg-type]


def test_progress_and_resuming_count_only_this_persons_judgements() -> None:
    queue = work()
    ann = JudgeName("ann")
    judgements = [judged("bob", PUMP_ID), judged("ann", PUMP_ID, kind="llm")]
    assert progress(queue, judgements, ann).describe() == "0 of 2 queries judged by ann"
    assert first_unjudged(queue, judgements, ann) == 0
    judgements.append(judged("ann", PUMP_ID))
    assert progress(queue, judgements, ann).describe() == "1 of 2 queries judged by ann"
    assert first_unjudged(queue, judgements, ann) == 1
    judgements.append(judged("ann", NIGHT_ID))
    assert first_unjudged(queue, judgements, ann) is None


def test_passages_added_to_the_pool_after_a_judgement_are_offered_again_and_only_they() -> None:
    night = work().tasks[1]
    earlier = judged("ann", NIGHT_ID, passages=night.passages[:1])  # before the canteen note was pooled
    assert unread_passages(night, [earlier]) == (1,)
    assert first_unjudged(work(), [judged("ann", PUMP_ID), earlier], JudgeName("ann")) == 1
    again = judged("ann", NIGHT_ID, passages=night.passages[1:])  # only the new passage judged
    assert unread_passages(night, [earlier, again]) == ()
    other_version = Judgement(
        NIGHT_ID, JudgeName("ann"), "human", "unclear", (), earlier.read, AT, {STAFF: "0" * 64}
    )
    assert unread_passages(night, [other_version]) == (0, 1)  # read in another version of the document


def test_a_save_becomes_a_judgement_of_the_text_at_its_offsets() -> None:
    answer = span_json(STAFF, "starts at 22:00")
    saved = judgement_from_request(work(), request(NIGHT_ID, "answers", [answer], note=" rota "), AT)
    assert saved.kind == "human" and saved.judge == "ann" and saved.verdict == "answers"
    assert [(s.doc_id, DOCS[s.doc_id][s.start : s.end]) for s in saved.spans] == [(STAFF, "starts at 22:00")]
    assert [s.text for s in saved.read] == [NIGHT_LINE, DOCS[NOTES].strip()]
    assert saved.documents == {STAFF: corpus()[STAFF].sha256, NOTES: corpus()[NOTES].sha256}
    assert saved.note == "rota" and saved.judged_at == AT


def test_overlapping_and_touching_spans_are_joined_within_their_passage() -> None:
    spans = [
        span_json(STAFF, "Night shift starts"),
        span_json(STAFF, "shift starts at"),
        span_json(STAFF, " 22:00"),
    ]
    saved = judgement_from_request(work(), request(NIGHT_ID, "answers", spans), AT)
    assert [s.text for s in saved.spans] == ["Night shift starts at 22:00"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"annotator": ""}, "type your name"),
        ({"annotator": "a\nb"}, "type your name"),
        ({"query_id": "q-nope"}, "has no pooled passages to judge"),
        ({"verdict": "maybe"}, "verdict 'maybe' is not one of"),
        ({"spans": []}, "select the text that answers the query"),
        ({"verdict": "unclear"}, "'unclear' has no spans"),
        ({"shown": []}, "changed since the page showed them"),
        ({"shown": None}, "does not list the passages shown"),
        ({"spans": [span_json(STAFF, "# Staff")]}, "is not inside a passage shown for this query"),
        ({"spans": [span_json(PUMPS, "The main pump")]}, "is not inside a passage shown for this query"),
        (
            {"spans": [{**span_json(STAFF, "22:00"), "text": "23:00"}]},
            "reads '23:00' but the document has '22:00'",
        ),
        ({"spans": [{**span_json(STAFF, "22:00"), "end": 1.5}]}, "must be whole numbers"),
        ({"spans": [{"doc_id": STAFF}]}, "span 1 needs doc_id, start, end and text"),
        ({"note": "x" * 3000}, "at most 2000 characters"),
    ],
)
def test_a_bad_save_is_refused_with_what_to_do(change: dict[str, Any], message: str) -> None:
    body = {**request(NIGHT_ID, "answers", [span_json(STAFF, "22:00")]), **change}
    with pytest.raises(AnnotationError, match=message.replace("(", r"\(").replace("[", r"\[")):
        judgement_from_request(work(), body, AT)


def test_a_shown_passage_in_another_document_version_is_refused() -> None:
    body = request(NIGHT_ID, "not-answerable")
    body["shown"][0]["document_sha256"] = "0" * 64
    with pytest.raises(AnnotationError, match="reload the page"):
        judgement_from_request(work(), body, AT)


def test_a_name_is_trimmed() -> None:
    assert check_judge_name("  Zoë M. ") == "Zoë M."


def test_the_source_appends_saves_and_rereads_a_new_pool(tmp_path: Path) -> None:
    store = write_judging_files(tmp_path / "judging")
    source = AnnotationSource(store, corpus())
    old = request(NIGHT_ID, "not-answerable")
    source.save(old)
    assert [(j.query_id, j.verdict) for j in store.read_judgements()] == [(NIGHT_ID, "not-answerable")]
    store.write_pool(pool()[:3])  # pooled again while the page was open: the canteen note is gone
    assert len(source.work().tasks[1].passages) == 1
    with pytest.raises(AnnotationError, match="changed since the page showed them"):
        source.save(old)
    assert len(store.read_judgements()) == 1


def test_queries_with_text_nobody_read_come_before_second_opinions() -> None:
    bob = [judged("bob", PUMP_ID)]  # bob read every passage of the pump query
    order = unread_first(queries(), pool(), bob, corpus())
    assert order == [NIGHT_ID]
    queue = build_work(queries(), pool(), corpus(), order=order)
    assert [t.query.query_id for t in queue.tasks] == [NIGHT_ID, PUMP_ID]
    ann = JudgeName("ann")
    assert first_unjudged(queue, bob, ann) == 0  # the night query: nobody read it
    assert first_unjudged(queue, bob, JudgeName("bob")) == 0
    with_ann = [*bob, judged("ann", NIGHT_ID)]
    assert first_unjudged(queue, with_ann, ann) == 1  # then the pump query, for agreement with bob
    assert unread_first(queries(), pool(), with_ann, corpus()) == []


def test_the_source_keeps_its_order_while_it_runs_and_puts_unread_first_on_a_restart(tmp_path: Path) -> None:
    store = write_judging_files(tmp_path / "judging")
    store.append_judgements([judged("bob", PUMP_ID)])
    source = AnnotationSource(store, corpus())
    assert [t.query.query_id for t in source.work().tasks] == [NIGHT_ID, PUMP_ID]
    source.save(request(NIGHT_ID, "not-answerable"))
    # nothing is unread now, yet the queue does not move under the page (its indexes stay valid)
    assert [t.query.query_id for t in source.work().tasks] == [NIGHT_ID, PUMP_ID]
    restarted = AnnotationSource(store, corpus())
    assert [t.query.query_id for t in restarted.work().tasks] == [PUMP_ID, NIGHT_ID]
    assert first_unjudged(restarted.work(), store.read_judgements(), JudgeName("ann")) == 0


def test_a_focused_source_offers_only_its_passages_in_its_order_with_reasons(tmp_path: Path) -> None:
    store = write_judging_files(tmp_path / "judging")
    canteen, alarm = pool()[3], pool()[0]
    focus = HoleFocus(
        (),
        (FocusQuery(NIGHT_ID, (canteen,), "night: the worst setup"), FocusQuery(PUMP_ID, (alarm,), "pump")),
        (),
    )
    source = AnnotationSource(store, corpus(), focus)
    tasks = source.work().tasks
    assert [(t.query.query_id, t.reason) for t in tasks] == [
        (NIGHT_ID, "night: the worst setup"),
        (PUMP_ID, "pump"),
    ]
    assert [[p.span for p in t.passages] for t in tasks] == [[canteen.span], [alarm.span]]
    assert source.work().focus == focus.describe()
    store.write_pool([])  # pooled again: the focus stays what the page started with
    assert source.work().tasks == tasks
    night = {"doc_id": NOTES, "start": canteen.span.start, "end": canteen.span.end}
    saved = source.save(
        {**request(NIGHT_ID, "unclear"), "shown": [{**night, "document_sha256": canteen.document_sha256}]}
    )
    assert saved.read == (canteen.span,)
