"""Judgements after their documents changed: moved with their text, stale when an answer is lost,
never used with offsets that no longer point at what was judged."""

from __future__ import annotations

from dataclasses import replace

from rag_eval_pipeline.core.judging.reanchor import anchor_judgements
from rag_eval_pipeline.core.types import CharacterSpan

from .builders import Q1, TEXTS, A, B, corpus, find, judgement, span


def edited(doc: str, new_text: str) -> dict:
    texts = dict(TEXTS)
    texts[doc] = new_text  # type: ignore[index]
    return texts


def test_an_unchanged_corpus_keeps_every_judgement_as_it_is() -> None:
    j = judgement(Q1, "ann", [span(A, 0, 57)], [find(A, "Rollbacks need two approvals.")])
    result = anchor_judgements([j], corpus())
    assert result.usable == (j,) and result.stale == () and result.reanchored == 0


def test_text_inserted_before_moves_the_spans_and_read_ranges() -> None:
    j = judgement(Q1, "ann", [span(A, 0, 57)], [find(A, "Rollbacks need two approvals.")])
    texts = edited(A, "Updated 2026. " + TEXTS[A])
    result = anchor_judgements([j], corpus(texts))
    (moved,) = result.usable
    assert result.reanchored == 1
    assert (moved.spans[0].start, moved.read[0].start) == (j.spans[0].start + 14, 14)
    assert texts[A][moved.spans[0].start : moved.spans[0].end] == "Rollbacks need two approvals."
    assert moved.documents == {A: corpus(texts)[A].sha256}


def test_an_edited_passage_is_no_longer_read_but_its_answer_moves() -> None:
    j = judgement(Q1, "ann", [span(A, 0, 57)], [find(A, "Rollbacks need two approvals.")])
    texts = edited(A, TEXTS[A].replace("Tuesdays", "Thursdays"))
    result = anchor_judgements([j], corpus(texts))
    (kept,) = result.usable
    assert kept.read == () and result.dropped_reads == 1  # the new text is offered again
    assert texts[A][kept.spans[0].start : kept.spans[0].end] == "Rollbacks need two approvals."


def test_an_answer_whose_text_is_gone_or_whose_document_was_removed_is_stale() -> None:
    gone = judgement(Q1, "ann", [span(A, 0, 57)], [find(A, "Rollbacks need two approvals.")])
    removed = judgement(Q1, "bob", [span(B, 0, 29)], [span(B, 0, 29)])
    texts = edited(A, TEXTS[A].replace("two approvals", "one approval"))
    del texts[B]
    result = anchor_judgements([gone, removed], corpus(texts))
    assert result.usable == ()
    reasons = [s.describe() for s in result.stale]
    assert (
        "q-1 by ann (2026-12-02T10:00:00Z): answer 'Rollbacks need two approvals.' no longer occurs in a.md"
        in reasons[0]
    )
    assert "document b.md was removed" in reasons[1]


def test_offsets_that_disagree_with_the_version_judged_are_stale_not_moved() -> None:
    j = judgement(Q1, "ann", [span(A, 0, 57)], [find(A, "Rollbacks need two approvals.")])
    # offsets 28-57 holding the text of 0-29: not what a.md holds there, though a.md is the version judged
    wrong = replace(j, spans=(CharacterSpan(A, 28, 57, TEXTS[A][0:29]),))
    result = anchor_judgements([wrong], corpus())
    (stale,) = result.stale
    assert "although the document is the version judged" in stale.reason
