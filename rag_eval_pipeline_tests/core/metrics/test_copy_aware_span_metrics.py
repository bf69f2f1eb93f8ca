"""Copy-aware span metrics against a deliberately naive reference: copies found by comparing the text at
every position of every document, and the matching by plain augmenting paths over single characters."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.corpus.corpus import Document
from rag_eval_pipeline.core.metrics import (
    ReferenceCopies,
    ReferenceDuplication,
    span_metrics,
    span_metrics_copies,
)
from rag_eval_pipeline.core.spans import merge_intervals
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId
from rag_eval_pipeline_tests.test_import_costs import imported_by

Triple = tuple[str, int, int]
Texts = dict[str, str]


def span(texts: Texts, doc: str, start: int, end: int) -> CharacterSpan:
    return CharacterSpan(DocumentId(doc), start, end, texts[doc][start:end])


def copies_of(texts: Texts) -> ReferenceCopies:
    return ReferenceCopies(Document(DocumentId(d), t) for d, t in texts.items())


def chars(spans: list[Triple]) -> set[tuple[str, int]]:
    return {(doc, i) for doc, start, end in spans for i in range(start, end)}


def runs(characters: set[tuple[str, int]]) -> list[Triple]:
    """Maximal runs of consecutive characters: the merged references, found character by character."""
    out: list[Triple] = []
    for doc, i in sorted(characters):
        if out and out[-1][0] == doc and out[-1][2] == i:
            out[-1] = (doc, out[-1][1], i + 1)
        else:
            out.append((doc, i, i + 1))
    return out


def naive_occurrences(texts: Texts, needle: str) -> list[tuple[str, int]]:
    return [
        (doc, j)
        for doc in sorted(texts)
        for j in range(len(texts[doc]) - len(needle) + 1)
        if texts[doc][j : j + len(needle)] == needle
    ]


def naive_matching(edges: dict[tuple[str, int], list[tuple[str, int]]]) -> int:
    """Kuhn's algorithm: one augmenting path search per reference character."""
    owner: dict[tuple[str, int], tuple[str, int]] = {}

    def augment(left: tuple[str, int], seen: set[tuple[str, int]]) -> bool:
        for right in edges[left]:
            if right in seen:
                continue
            seen.add(right)
            if right not in owner or augment(owner[right], seen):
                owner[right] = left
                return True
        return False

    return sum(augment(left, set()) for left in edges)


def naive(texts: Texts, gt: list[Triple], ret: list[Triple]) -> tuple[int, dict[str, float]]:
    g, r = chars(gt), chars(ret)
    edges: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for doc, start, end in runs(g):
        found = naive_occurrences(texts, texts[doc][start:end])
        for i in range(end - start):
            edges[(doc, start + i)] = [(d, j + i) for d, j in found if (d, j + i) in r]
    matched = naive_matching(edges)
    union = len(r) + len(g) - matched
    return matched, {
        "span_recall_copies": matched / len(g),
        "span_precision_copies": matched / len(r) if r else 0.0,
        "span_iou_copies": matched / union if r else 0.0,
    }


def scored(texts: Texts, gt: list[Triple], ret: list[Triple]) -> dict[str, float]:
    m = span_metrics_copies([span(texts, *t) for t in gt], [span(texts, *t) for t in ret], copies_of(texts))
    return {
        "span_recall_copies": m.span_recall_copies,
        "span_precision_copies": m.span_precision_copies,
        "span_iou_copies": m.span_iou_copies,
    }


# Documents made of a few shared passages, so repeated text is the rule: within a document, across
# documents, overlapping ("aaaa"), and references that are copies of each other.
PASSAGES = st.sampled_from(["ab", "aaaa", "abc", "ba", "xyz", "q", "abab"])


@st.composite
def cases(draw: st.DrawFn) -> tuple[Texts, list[Triple], list[Triple]]:
    n_docs = draw(st.integers(1, 3))
    texts = {doc: "".join(draw(st.lists(PASSAGES, min_size=1, max_size=5))) for doc in "abc"[:n_docs]}

    def spans(min_size: int, max_size: int) -> st.SearchStrategy[list[Triple]]:
        one = st.sampled_from(sorted(texts)).flatmap(
            lambda d: st.tuples(st.just(d), st.integers(0, len(texts[d])), st.integers(0, len(texts[d]))).map(
                lambda t: (t[0], min(t[1], t[2]), max(t[1], t[2]))
            )
        )
        return st.lists(one, min_size=min_size, max_size=max_size)

    gt = draw(spans(1, 3).filter(lambda s: bool(chars(s))))
    ret = draw(spans(0, 4))
    return texts, gt, ret


@settings(max_examples=400, deadline=None)
@given(cases())
@example(({"a": "aaaa"}, [("a", 0, 2)], [("a", 1, 4)]))  # overlapping copies of "aa"
@example(({"a": "xyHELLO", "b": "HELLO"}, [("a", 2, 7)], [("b", 0, 5)]))  # a copy in another document
@example(({"a": "HELLO--HELLO"}, [("a", 0, 5), ("a", 7, 12)], [("a", 0, 5)]))  # references copy each other
@example(({"a": "abab", "b": "ab"}, [("a", 0, 2), ("a", 1, 3)], [("b", 0, 2), ("a", 2, 4)]))
def test_copy_aware_metrics_match_the_naive_matching(case: tuple[Texts, list[Triple], list[Triple]]) -> None:
    texts, gt, ret = case
    matched, expected = naive(texts, gt, ret)
    assert scored(texts, gt, ret) == pytest.approx(expected, rel=1e-12, abs=0)
    exact = span_metrics([span(texts, *t) for t in gt], [span(texts, *t) for t in ret])
    g, r = chars(gt), chars(ret)
    assert len(g & r) <= matched <= min(len(g), len(r))  # I <= I* <= min(|G|, |R|)
    got = scored(texts, gt, ret)
    assert exact.span_recall <= got["span_recall_copies"] <= 1.0
    assert exact.span_precision <= got["span_precision_copies"] <= 1.0
    if all(len(naive_occurrences(texts, texts[d][s:e])) == 1 for d, s, e in runs(g)):
        assert (got["span_recall_copies"], got["span_precision_copies"], got["span_iou_copies"]) == (
            exact.span_recall,
            exact.span_precision,
            exact.span_iou,
        )


@settings(max_examples=200, deadline=None)
@given(cases())
def test_occurrences_and_duplication_counts_match_a_scan_of_every_position(
    case: tuple[Texts, list[Triple], list[Triple]],
) -> None:
    texts, gt, _ = case
    copies = copies_of(texts)
    references = runs(chars(gt))
    for doc, start, end in references:
        found = copies.of(DocumentId(doc), start, end)
        assert [(c.doc_id, c.start) for c in found] == naive_occurrences(texts, texts[doc][start:end])
    extra = [len(naive_occurrences(texts, texts[d][s:e])) - 1 for d, s, e in references]
    merged = merge_intervals([span(texts, *t) for t in gt])
    assert copies.duplication(merged) == ReferenceDuplication(
        int(any(extra)), sum(1 for n in extra if n), sum(extra)
    )


def test_a_retrieved_copy_elsewhere_scores_where_the_position_exact_metrics_score_zero() -> None:
    texts = {"a": "intro. Reset the pump. end", "b": "faq: Reset the pump."}
    gt = [span(texts, "a", 7, 22)]
    retrieved = [span(texts, "b", 5, 20)]
    assert span_metrics(gt, retrieved).span_recall == 0.0
    m = span_metrics_copies(gt, retrieved, copies_of(texts))
    assert (m.span_recall_copies, m.span_precision_copies, m.span_iou_copies) == (1.0, 1.0, 1.0)


def test_no_character_counts_twice() -> None:
    # two references that are copies of each other, one retrieved: half the reference text is found
    texts = {"a": "HELLO--HELLO"}
    gt = [span(texts, "a", 0, 5), span(texts, "a", 7, 12)]
    m = span_metrics_copies(gt, [span(texts, "a", 0, 5)], copies_of(texts))
    assert (m.span_recall_copies, m.span_precision_copies, m.span_iou_copies) == (0.5, 1.0, 0.5)
    # overlapping copies: "aa" at 0, 1 and 2 of "aaaa"; retrieved [1, 4) holds two of its characters' partners
    texts = {"a": "aaaa"}
    m = span_metrics_copies([span(texts, "a", 0, 2)], [span(texts, "a", 1, 4)], copies_of(texts))
    assert (m.span_recall_copies, m.span_precision_copies) == (1.0, 2 / 3)


def test_empty_retrieval_scores_zero_and_empty_ground_truth_is_invalid() -> None:
    texts = {"a": "abab"}
    m = span_metrics_copies([span(texts, "a", 0, 2)], [], copies_of(texts))
    assert (m.span_recall_copies, m.span_precision_copies, m.span_iou_copies) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="ground-truth"):
        span_metrics_copies([span(texts, "a", 1, 1)], [span(texts, "a", 0, 2)], copies_of(texts))


def test_copies_are_searched_once_per_distinct_text() -> None:
    copies = copies_of({"a": "abab", "b": "ab"})
    first = copies.occurrences("ab")
    assert [(c.doc_id, c.start) for c in first] == [("a", 0), ("a", 2), ("b", 0)]
    assert copies.occurrences("ab") is first  # memoised: the second question asks for free
    assert copies.of(DocumentId("a"), 2, 4) is first
    with pytest.raises(KeyError, match="'z' is not in the corpus"):
        copies.of(DocumentId("z"), 0, 1)


def test_the_warning_names_the_counts() -> None:
    assert ReferenceDuplication().describe(10) == ""
    text = ReferenceDuplication(2, 3, 5).describe(40)
    assert text.startswith("duplicated reference text: 2 of 40 questions have references")
    assert "(3 references, 5 extra copies)" in text
    assert "1 of 1 question has" in ReferenceDuplication(1, 1, 1).describe(1)
    assert ReferenceDuplication.of_questions([0, 2, 1], [0, 3, 1]) == ReferenceDuplication(2, 3, 4)
    assert ReferenceDuplication(1, 2, 3) + ReferenceDuplication(0, 0, 0) == ReferenceDuplication(1, 2, 3)


@settings(max_examples=200, deadline=None)
@given(cases().map(lambda case: ({"a": "abcdefghij", "b": "klmnopqrst", "c": "uvwxyz0123"}, *case[1:])))
def test_without_duplicated_text_they_equal_the_position_exact_metrics(
    case: tuple[Texts, list[Triple], list[Triple]],
) -> None:
    texts, gt, ret = case  # every character occurs once in the corpus: no reference has a copy
    gt = [(d, min(s, 10), min(e, 10)) for d, s, e in gt]
    ret = [(d, min(s, 10), min(e, 10)) for d, s, e in ret]
    assume(chars(gt))
    exact = span_metrics([span(texts, *t) for t in gt], [span(texts, *t) for t in ret])
    got = scored(texts, gt, ret)
    assert got == {
        "span_recall_copies": exact.span_recall,
        "span_precision_copies": exact.span_precision,
        "span_iou_copies": exact.span_iou,
    }


def test_scipy_is_imported_only_when_a_copy_needs_the_matching() -> None:
    # every run launched from the UI imports the code location (test_import_costs.py)
    assert (
        imported_by(
            ["rag_eval_pipeline.definitions", "rag_eval_pipeline.core.evaluation.evaluation"], ["scipy"]
        )
        == []
    )
