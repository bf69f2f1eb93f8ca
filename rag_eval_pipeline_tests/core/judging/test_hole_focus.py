"""What `rag-eval annotate --holes` offers: exactly the pooled text the flagged setups' top k holds and
nobody read, worst setup first, each query with its reason; and once judged, nothing is flagged."""

from __future__ import annotations

from rag_eval_pipeline.core.judging.hole_focus import hole_focus
from rag_eval_pipeline.core.judging.judge_views import judge_views, read_by_query
from rag_eval_pipeline.core.judging.judged_at_k import holes
from rag_eval_pipeline.core.judging.pool import pool_query
from rag_eval_pipeline.core.judging.types import PooledPassage

from .builders import Q1, Q2, A, B, corpus, judgement, run, span

WORST = run("fixed-20 x dense", {Q1: [(A, 0, 20), (A, 40, 60), (B, 0, 30)], Q2: [(B, 0, 20)]})
MILD = run("fixed-20 x bm25", {Q1: [(A, 0, 20)], Q2: [(B, 0, 10), (B, 30, 50)]})
WINDOWS = run("bm25@windows-500", {Q1: [(A, 60, 90)]})  # pooled, but not a setup
EVALUATED_K = {WORST.name: 3, MILD.name: 2}
JUDGED = [judgement(Q1, "ann", [span(A, 0, 50)]), judgement(Q2, "bob", [span(B, 0, 10)])]


def pooled(depth: int = 3) -> list[PooledPassage]:
    read = read_by_query(judge_views(JUDGED))
    return [
        p
        for q in (Q1, Q2)
        for p in pool_query(q, [WORST, MILD, WINDOWS], corpus(), depth, read.get(q)).passages
    ]


def flagged(judgements: list, pool: list[PooledPassage]) -> list:
    read = read_by_query(judge_views(judgements))
    return holes([MILD, WORST], corpus(), read, [Q1, Q2], EVALUATED_K, pool)


def ranges(passages: list[PooledPassage]) -> list[tuple[str, str, int, int]]:
    return [(p.query_id, p.span.doc_id, p.span.start, p.span.end) for p in passages]


def test_the_focus_is_the_flagged_text_nobody_read_worst_setup_first() -> None:
    pool = pooled()
    found = flagged(JUDGED, pool)
    # judged@3 of WORST: q-1 40 of 70 unread, q-2 10 of 20: 1 - (4/7 + 1/2) / 2; MILD: 1 - (0 + 2/3) / 2
    assert [h.judged.setup for h in found] == [MILD.name, WORST.name]  # holes() keeps the runs' order
    focus = hole_focus(found, pool, JUDGED, corpus(), [Q2, Q1])
    assert [h.judged.setup for h in focus.holes] == [WORST.name, MILD.name] and not focus.missing
    # under the worst setup, q-1 (40 characters it left unread) before q-2 (10), whatever queries.jsonl says;
    # q-2 comes once, with MILD's unread b.md[30,50] too
    assert [(q.query_id, q.reason) for q in focus.queries] == [
        (Q1, "passages fixed-20 x dense retrieved that nobody read: judged@3 0.46"),
        (Q2, "passages fixed-20 x dense retrieved that nobody read: judged@3 0.46"),
    ]
    # exactly the holes' text: the window run's a.md[60,90] is pooled with a.md[50,60] but left out
    assert ranges(focus.passages) == [(Q1, A, 50, 60), (Q1, B, 0, 30), (Q2, B, 10, 20), (Q2, B, 30, 50)]
    assert sorted(ranges(focus.passages)) == sorted(ranges([p for h in found for p in h.passages]))
    assert all(p.span.text == corpus()[p.span.doc_id].text[p.span.start : p.span.end] for p in focus.passages)
    assert focus.describe().startswith("Only the passages that flagged setups retrieved and nobody read")
    assert "fixed-20 x dense (judged@3 0.46); fixed-20 x bm25 (judged@2 0.67)" in focus.describe()


def test_judging_the_focus_leaves_no_setup_flagged() -> None:
    pool = pooled()
    focus = hole_focus(flagged(JUDGED, pool), pool, JUDGED, corpus(), [Q1, Q2])
    filled = [judgement(q.query_id, "cy", [p.span for p in q.passages]) for q in focus.queries]
    assert flagged([*JUDGED, *filled], pool) == []
    assert hole_focus([], pool, [*JUDGED, *filled], corpus(), [Q1, Q2]).queries == ()


def test_text_read_since_the_holes_were_found_is_not_offered() -> None:
    pool = pooled()
    found = flagged(JUDGED, pool)
    read_since = [*JUDGED, judgement(Q1, "bob", [span(B, 0, 30)])]
    focus = hole_focus(found, pool, read_since, corpus(), [Q1, Q2])
    assert ranges(focus.passages) == [(Q1, A, 50, 60), (Q2, B, 10, 20), (Q2, B, 30, 50)]


def test_holes_the_pool_lacks_are_missing_with_the_depth_that_pools_them() -> None:
    shallow = pooled(depth=1)  # WORST's top 3 is not pooled: nothing of it to show
    found = flagged(JUDGED, shallow)
    focus = hole_focus(
        [h for h in found if h.judged.setup == WORST.name], shallow, JUDGED, corpus(), [Q1, Q2]
    )
    assert [h.judged.setup for h in focus.missing] == [WORST.name]
    assert focus.pool_advice() == "rag-eval pool build --depth 3"
    # what the shallow pool does hold of it is still offered (q-2's b.md[10,20] is its top 1)
    assert ranges(focus.passages) == [(Q2, B, 10, 20)]
    deep = pooled()
    assert hole_focus(flagged(JUDGED, deep), deep, JUDGED, corpus(), [Q1, Q2]).pool_advice() is None
