"""judged@k: the share of a setup's top k characters no judge read, the setups it flags with what to
do, and the passages still to judge (what the annotation page offers next)."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judging.judge_views import judge_views, read_by_query
from rag_eval_pipeline.core.judging.judged_at_k import holes, judged_at_k, unjudged_passages
from rag_eval_pipeline.core.judging.pool import pool_query
from rag_eval_pipeline.core.judging.types import JudgeName
from rag_eval_pipeline.core.spans import merge_intervals
from rag_eval_pipeline.core.types import DocumentId

from .builders import Q1, Q2, Q3, TEXTS, A, B, corpus, judgement, run, span

SETUP = run("fixed-20 x dense", {Q1: [(A, 0, 20), (A, 40, 60), (B, 0, 30)], Q2: [(B, 0, 20)]})
OTHER = run("fixed-20 x bm25", {Q1: [(A, 0, 20)], Q2: [(B, 0, 10)]})
READ = {Q1: merge_intervals([span(A, 0, 50)]), Q2: merge_intervals([span(B, 0, 10)])}


def test_judged_at_k_counts_characters_per_query_and_averages_over_queries() -> None:
    found = judged_at_k([SETUP, OTHER], READ, [Q1, Q2], [1, 2, 3])
    by = {(j.setup, j.k): j for j in found}
    # k=1: q-1 [0,20] all read (0 unjudged); q-2 [0,20] half read (10 of 20): mean 0.25
    assert by[("fixed-20 x dense", 1)].unjudged_share == pytest.approx(0.25)
    assert (by[("fixed-20 x dense", 1)].retrieved_chars, by[("fixed-20 x dense", 1)].unjudged_chars) == (
        40,
        10,
    )
    # k=2: q-1 [0,20]+[40,60], 10 of 40 unjudged; q-2 has one hit: still 10 of 20
    assert by[("fixed-20 x dense", 2)].unjudged_share == pytest.approx((0.25 + 0.5) / 2)
    # k=3: q-1 adds b.md[0,30], nobody read it: 40 of 70
    assert by[("fixed-20 x dense", 3)].unjudged_share == pytest.approx((40 / 70 + 0.5) / 2)
    assert by[("fixed-20 x dense", 3)].judged_share == pytest.approx(1 - (40 / 70 + 0.5) / 2)
    assert by[("fixed-20 x bm25", 3)].unjudged_share == 0.0 and by[("fixed-20 x bm25", 3)].n_queries == 2


def test_overlapping_chunks_count_their_characters_once() -> None:
    overlapping = run("overlap x dense", {Q1: [(A, 40, 60), (A, 45, 60)]})
    (j,) = judged_at_k([overlapping], READ, [Q1], [2])
    assert (j.retrieved_chars, j.unjudged_chars) == (20, 10)


def test_a_query_the_setup_retrieved_nothing_for_is_left_out() -> None:
    (j,) = judged_at_k([OTHER], READ, [Q1, Q3], [1])
    assert j.n_queries == 1 and j.unjudged_share == 0.0


def test_a_setup_above_the_threshold_is_flagged_with_its_unjudged_passages() -> None:
    c = corpus()
    (hole,) = holes([SETUP, OTHER], c, READ, [Q1, Q2], {"fixed-20 x dense": 3, "fixed-20 x bm25": 1}, pool=[])
    assert hole.judged.setup == "fixed-20 x dense" and hole.judged.flagged()
    assert [(p.query_id, p.span.doc_id, p.span.start, p.span.end) for p in hole.passages] == [
        (Q1, A, 50, 60),
        (Q1, B, 0, 30),
        (Q2, B, 10, 20),
    ]
    assert not hole.in_pool
    assert "`rag-eval pool build --depth 3`" in hole.advice()
    # once pooled, judging them is all that is left
    pooled = [p for q in (Q1, Q2) for p in pool_query(q, [SETUP], c, 3, READ.get(q)).passages]
    (hole,) = holes([SETUP], c, READ, [Q1, Q2], {"fixed-20 x dense": 3}, pool=pooled)
    assert hole.in_pool
    assert hole.advice() == (
        "3 passages (50 characters) of its top 3 were never read: judge them, `rag-eval annotate --holes` offers exactly those"
    )
    # at 20 % or less nothing is flagged
    assert holes([SETUP], c, READ, [Q1, Q2], {"fixed-20 x dense": 1}, pool=pooled, threshold=0.25) == []


def test_unjudged_passages_are_the_pool_minus_what_was_read() -> None:
    c = corpus()
    pool = [p for q in (Q1, Q2) for p in pool_query(q, [SETUP, OTHER], c, 3).passages]
    judgements = [
        judgement(Q1, "ann", [span(A, 0, 50)], [span(A, 0, 27)]),
        judgement(Q2, "bob", [span(B, 0, 10)]),
    ]
    left = unjudged_passages(pool, judgements, c)
    assert [(p.query_id, p.span.doc_id, p.span.start, p.span.end) for p in left] == [
        (Q1, A, 50, 60),
        (Q1, B, 0, 30),
        (Q2, B, 10, 20),
    ]
    assert all(p.span.text == TEXTS[p.span.doc_id][p.span.start : p.span.end] for p in left)
    # for one annotator: what they have not read (bob never saw q-1)
    for_bob = unjudged_passages(pool, judgements, c, judge=JudgeName("bob"))
    assert [(p.query_id, p.span.start, p.span.end) for p in for_bob][:2] == [(Q1, 0, 20), (Q1, 40, 60)]
    # only the passages some setups found (a piece keeps the runs of the passage it was cut from)
    only = unjudged_passages(pool, judgements, c, found_by={"fixed-20 x bm25"})
    assert [(p.query_id, p.span.start, p.span.end) for p in only] == [(Q2, 10, 20)]
    assert unjudged_passages(pool, judgements, c, found_by={"recursive-50 x dense"}) == []
    # all judged: nothing left
    everything = [judgement(q, "ann", [p.span for p in pool if p.query_id == q]) for q in (Q1, Q2)]
    assert unjudged_passages(pool, everything, c) == []


def test_a_passage_whose_document_changed_moves_with_its_text_or_is_left_out() -> None:
    c = corpus()
    pool = pool_query(Q1, [SETUP], c, 3).passages  # a.md[0,20], a.md[40,60], b.md[0,30]
    edited = dict(TEXTS)
    edited[A] = "NEW. " + TEXTS[A]  # everything in a.md moves 5 characters on
    edited[B] = TEXTS[B].replace("Backups", "Snapshots")  # b.md[0,30] is gone
    left = unjudged_passages(pool, [], corpus(edited))
    assert [(p.span.doc_id, p.span.start, p.span.end) for p in left] == [(A, 5, 25), (A, 45, 65)]
    assert left[0].document_sha256 == corpus(edited)[DocumentId("a.md")].sha256


def test_read_by_query_joins_every_judge() -> None:
    judgements = [judgement(Q1, "ann", [span(A, 0, 10)]), judgement(Q1, "bob", [span(A, 5, 30)])]
    assert read_by_query(judge_views(judgements)) == {Q1: {A: [(0, 30)]}}
