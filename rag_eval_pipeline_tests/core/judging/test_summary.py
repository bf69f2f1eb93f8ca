"""The judging summary the report shows: queries imported, judged and exported as questions, stale
judgements, each judge's share, and the agreement of every pair of judges (two people and an LLM judge),
kappa checked against a hand computation; no summary without a judgement."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.judging.agreement import Table
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.summary import JudgeShare, judging_summary
from rag_eval_pipeline.core.judging.types import ImportedQuery, JudgeName

from .builders import Q1, Q2, Q3, TEXTS, B, corpus, judgement, span
from .test_agreement import ANN, BOB, POOL, WINDOWS, judged_by

# b.md as it was when "cat" judged q-3: the answer she selected ("weekly") was edited away since
OLD_TEXTS = {**TEXTS, B: TEXTS[B].replace("nightly", "weekly")}


def handmade_store(folder: Path) -> JudgingStore:
    """Three imported queries; ann and bob (people) judged q-1 and q-2 over the ten pooled passages, an LLM
    judge graded each passage (relevant: passages 0 and 1), and cat judged q-3 in a version of b.md whose
    answer is gone (stale)."""
    store = JudgingStore(folder)
    store.write_queries(
        [
            ImportedQuery(Q1, "when do deploys happen?", count=5),
            ImportedQuery(Q2, "when do backups run?", count=2),
            ImportedQuery(Q3, "how often are backups taken?"),
        ]
    )
    store.write_pool(POOL)
    llm = [
        judgement(q, "llm:gpt", [w], kind="llm", grade=3 if i in (0, 1) else 1, verdict="not-answerable")
        for i, (q, w) in enumerate(WINDOWS)
    ]
    start = OLD_TEXTS[B].index("weekly")
    cat = judgement(
        Q3, "cat", [span(B, 0, 30, OLD_TEXTS)], [span(B, start, start + 6, OLD_TEXTS)], texts=OLD_TEXTS
    )
    store.append_judgements([*judged_by("ann", ANN), *judged_by("bob", BOB), *llm, cat])
    return store


def test_the_summary_counts_the_judging_and_compares_every_pair_of_judges(tmp_path: Path) -> None:
    summary = judging_summary(handmade_store(tmp_path / "judging"), corpus)
    assert summary is not None
    assert (summary.n_queries, summary.n_judged, summary.n_questions) == (3, 2, 2)
    assert summary.n_judgements == 2 + 2 + 10 + 1 and summary.not_imported == 0
    (stale,) = summary.stale
    assert (stale.judgement.judge, stale.judgement.query_id) == ("cat", Q3)
    assert "'weekly' no longer occurs in b.md" in stale.reason
    # cat's only judgement is stale: she judged nothing that still holds
    assert summary.judges == (
        JudgeShare(JudgeName("ann"), "human", 2),
        JudgeShare(JudgeName("bob"), "human", 2),
        JudgeShare(JudgeName("llm:gpt"), "llm", 2),
    )
    assert summary.kind_of("llm:gpt") == "llm" and summary.kind_of("nobody") is None
    pairs = {(p.judge_a, p.judge_b): p for p in summary.agreement}
    assert list(pairs) == [("ann", "bob"), ("ann", "llm:gpt"), ("bob", "llm:gpt")]
    # ann / bob over the ten passages (test_agreement.py): p_o 0.7, p_e 0.5, kappa 0.4
    assert pairs[("ann", "bob")].kappa == pytest.approx(0.4)
    assert pairs[("ann", "bob")].span_iou == pytest.approx(0.3)
    # ann / LLM: relevant for ann 0-3, for the LLM (grade >= 2) 0-1:
    #   both 2, ann only 2, neither 6; p_o 0.8, p_e 0.4 * 0.2 + 0.6 * 0.8 = 0.56, kappa 0.24 / 0.44
    assert pairs[("ann", "llm:gpt")].table == Table(both=2, only_a=2, only_b=0, neither=6)
    assert pairs[("ann", "llm:gpt")].kappa == pytest.approx(0.24 / 0.44)
    # bob / LLM: relevant for bob 0, 1, 2, 4, 5, for the LLM 0, 1:
    #   both 2, bob only 3, neither 5; p_o 0.7, p_e 0.5 * 0.2 + 0.5 * 0.8 = 0.5, kappa 0.2 / 0.5 = 0.4
    assert pairs[("bob", "llm:gpt")].table == Table(both=2, only_a=3, only_b=0, neither=5)
    assert pairs[("bob", "llm:gpt")].kappa == pytest.approx(0.4)
    # the LLM selected no span where bob did: no overlap on either query
    assert (pairs[("bob", "llm:gpt")].span_iou, pairs[("bob", "llm:gpt")].n_span_queries) == (0.0, 2)


def test_no_judgement_no_summary_and_the_corpus_is_not_read(tmp_path: Path) -> None:
    def unread() -> object:
        raise AssertionError("the corpus is read only when there are judgements")

    assert judging_summary(JudgingStore(tmp_path / "missing"), unread) is None  # type: ignore[arg-type]
    store = JudgingStore(tmp_path / "judging")
    store.write_queries([ImportedQuery(Q1, "when do deploys happen?")])  # imported, nobody judged yet
    assert judging_summary(store, unread) is None  # type: ignore[arg-type]


def test_judged_queries_no_longer_imported_are_counted(tmp_path: Path) -> None:
    store = handmade_store(tmp_path / "judging")
    store.write_queries([ImportedQuery(Q1, "when do deploys happen?")])  # q-2 imported no more
    summary = judging_summary(store, corpus)
    assert summary is not None
    assert (summary.n_queries, summary.n_judged, summary.n_questions, summary.not_imported) == (1, 1, 1, 1)
