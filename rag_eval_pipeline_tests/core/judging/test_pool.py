"""Pooling: the top N of every run, merged by character range (no character shown twice), cut at the
text judges already read; a new run (a new chunk config) adds only text nobody read."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judging.judge_views import judge_views, read_by_query
from rag_eval_pipeline.core.judging.pool import build_pool, pool_query
from rag_eval_pipeline.core.spans import merge_intervals

from .builders import Q1, Q2, TEXTS, A, B, corpus, judgement, run, span

X = run("fixed-30 x dense", {Q1: [(A, 0, 27), (A, 20, 57), (B, 30, 60)], Q2: [(B, 0, 29)]})
Y = run("bm25@windows-500", {Q1: [(A, 57, 80), (B, 0, 29)]})


def test_overlapping_and_touching_ranges_of_a_document_become_one_passage() -> None:
    pool = pool_query(Q1, [X, Y], corpus(), depth=10)
    assert [(p.span.doc_id, p.span.start, p.span.end) for p in pool.passages] == [
        (A, 0, 80),  # [0,27] and [20,57] overlap, [57,80] touches them
        (B, 0, 29),  # [0,29] and [30,60] are a character apart: two passages
        (B, 30, 60),
    ]
    first = pool.passages[0]
    assert first.span.text == TEXTS[A][0:80]
    assert first.document_sha256 == corpus()[A].sha256
    # every run with a hit in it, at its best rank there, best rank first
    assert first.found_by == ("bm25@windows-500 #1", "fixed-30 x dense #1")
    assert pool.passages[1].found_by == ("bm25@windows-500 #2",)
    assert pool.passages[2].found_by == ("fixed-30 x dense #3",)
    # no character twice: the passages' lengths add up to the merged union of every hit
    hits = [h for r in (X, Y) for h in r.hits[Q1]]
    assert (
        pool.pooled_chars
        == sum(e - s for ivs in merge_intervals(hits).values() for s, e in ivs)
        == 80 + 29 + 30
    )


def test_depth_keeps_each_runs_top_n_only() -> None:
    pool = pool_query(Q1, [X, Y], corpus(), depth=1)
    assert [(p.span.doc_id, p.span.start, p.span.end) for p in pool.passages] == [(A, 0, 27), (A, 57, 80)]
    with pytest.raises(ValueError, match="at least 1"):
        pool_query(Q1, [X], corpus(), depth=0)


def test_counts_per_query_on_a_constructed_corpus() -> None:
    pools = build_pool([Q1, Q2], [X, Y], corpus(), depth=10)
    assert [(len(p.passages), p.pooled_chars, p.new_chars, p.judged_chars) for p in pools] == [
        (3, 139, 139, 0),
        (1, 29, 29, 0),
    ]


def test_text_already_read_is_cut_out_of_what_is_new() -> None:
    read = {Q1: merge_intervals([span(A, 0, 40), span(B, 0, 29)])}
    (pool,) = build_pool([Q1], [X, Y], corpus(), depth=10, read=read)
    assert [(p.span.start, p.span.end) for p in pool.judged] == [(0, 40), (0, 29)]
    assert [(p.span.doc_id, p.span.start, p.span.end) for p in pool.new] == [(A, 40, 80), (B, 30, 60)]
    assert (pool.pooled_chars, pool.judged_chars, pool.new_chars) == (139, 69, 70)
    # every piece keeps who found it
    assert pool.new[0].found_by == ("bm25@windows-500 #1", "fixed-30 x dense #2")


def test_a_new_chunk_config_offers_no_passage_where_the_text_was_judged() -> None:
    first = pool_query(Q1, [X], corpus(), depth=10)
    judged = [judgement(Q1, "ann", [p.span for p in first.passages], [span(A, 0, 27)])]
    read = read_by_query(judge_views(judged))
    # the new config's chunks: one inside judged text, one straddling judged and new text, one new
    new_config = run("recursive-50 x dense", {Q1: [(A, 5, 25), (A, 50, 70), (B, 61, 70)]})
    again = pool_query(Q1, [X, new_config], corpus(), depth=10, read=read.get(Q1))
    assert [(p.span.doc_id, p.span.start, p.span.end) for p in again.new] == [(A, 57, 70), (B, 61, 70)]
    for passage in again.new:
        assert not any(
            s < passage.span.end and passage.span.start < e for s, e in read[Q1].get(passage.span.doc_id, [])
        )
    assert again.new[0].found_by == ("recursive-50 x dense #2",)
    # the judged text stays in the pool for a second annotator
    assert sum(len(p.span) for p in again.judged) == first.pooled_chars
