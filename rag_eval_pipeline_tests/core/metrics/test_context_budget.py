"""Span metrics at a context budget against a naive per-token, per-character reference.

The reference encodes with tiktoken directly, pays one token at a time, and keeps the characters whose
UTF-8 bytes all lie in the tokens paid for; the module under test cuts at token start offsets
(``TiktokenTokenizer.token_starts``). Texts mix in characters cl100k splits into several byte tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.chunking import FixedSizeChunker, chunk_corpus
from rag_eval_pipeline.core.chunking.tokenization import CL100K_OFFLINE, cl100k_tokenizer
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.evaluation.evaluation import token_level_result
from rag_eval_pipeline.core.metrics import context_budget
from rag_eval_pipeline.core.metrics.context_budget import (
    BUDGET_METRICS,
    CONTEXT_BUDGETS,
    ChunkTokenStarts,
    budgeted_spans,
    context_budget_metrics,
)
from rag_eval_pipeline.core.metrics.span_metrics import span_metrics
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl
from rag_eval_pipeline.core.types import (
    CharacterSpan,
    ChunkId,
    DocumentId,
    PositionAwareChunk,
    QuestionId,
    RetrievedChunk,
)

ENCODING = tiktoken.get_encoding(CL100K_OFFLINE)
# ASCII, two-byte Latin, CJK, Hangul, a combining accent and emoji: cl100k splits the last ones (and some
# CJK) into byte tokens that begin inside one character.
PIECES = ["a", "b", " ", "the ", "\n", ".", "é", "ü", "日本", "語", "한", "e\u0301", "😀", "👍🏽", "𝔘", "🇩🇪"]
Docs = dict[str, str]
Triple = tuple[str, int, int]


def chunk(docs: Docs, doc: str, start: int, end: int) -> PositionAwareChunk:
    return PositionAwareChunk(
        ChunkId(f"{doc}:{start}:{end}"), DocumentId(doc), start, end, docs[doc][start:end]
    )


def span(docs: Docs, doc: str, start: int, end: int) -> CharacterSpan:
    return CharacterSpan(DocumentId(doc), start, end, docs[doc][start:end])


def kept_characters(text: str, paid: bytes) -> int:
    """How many leading characters of ``text`` have every UTF-8 byte among the ``paid`` bytes."""
    kept = 0
    while kept < len(text) and len(text[: kept + 1].encode("utf-8")) <= len(paid):
        kept += 1
    return kept


def naive_budgeted(chunks: list[PositionAwareChunk], budget: int) -> set[tuple[str, int]]:
    """The (document, offset) characters the generator gets for ``budget`` tokens, paid one by one."""
    left = budget
    chars: set[tuple[str, int]] = set()
    for c in chunks:
        paid = b""
        for token in ENCODING.encode_ordinary(c.text):
            if left == 0:
                break
            paid += ENCODING.decode_single_token_bytes(token)
            left -= 1
        assert c.text.encode("utf-8").startswith(paid)
        chars |= {(c.doc_id, c.start + i) for i in range(kept_characters(c.text, paid))}
        if left == 0:
            break
    return chars


def naive_scores(gt: list[CharacterSpan], chunks: list[PositionAwareChunk], budget: int) -> tuple[float, ...]:
    g = {(s.doc_id, i) for s in gt for i in range(s.start, s.end)}
    r = naive_budgeted(chunks, budget)
    shared = len(g & r)
    return shared / len(g), shared / len(r) if r else 0.0, shared / len(g | r) if r else 0.0


@st.composite
def cases(draw: st.DrawFn) -> tuple[Docs, list[Triple], list[Triple]]:
    names = draw(st.lists(st.sampled_from("de"), min_size=1, max_size=2, unique=True))
    docs = {n: "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=30))) for n in names}

    def located(min_length: int) -> st.SearchStrategy[Triple]:
        return (
            st.sampled_from(names)
            .flatmap(lambda n: st.tuples(st.just(n), st.integers(0, len(docs[n]) - min_length)))
            .flatmap(
                lambda t: st.tuples(
                    st.just(t[0]), st.just(t[1]), st.integers(t[1] + min_length, len(docs[t[0]]))
                )
            )
        )

    gt = draw(st.lists(located(1), min_size=1, max_size=3))
    ranked = draw(st.lists(located(0), max_size=6))
    return docs, gt, ranked


@settings(max_examples=300, deadline=None)
@given(cases(), st.lists(st.integers(0, 60), min_size=1, max_size=4))
@example(({"d": "😀😀 ab"}, [("d", 0, 2)], [("d", 0, 5)]), [0, 1, 2, 3, 4, 5])  # 😀 is two byte tokens
@example(({"d": "日本語 한국"}, [("d", 0, 3)], [("d", 1, 4), ("d", 0, 2)]), [1, 2, 3])  # overlap paid twice
def test_budgeted_metrics_match_per_token_reference(
    case: tuple[Docs, list[Triple], list[Triple]], budgets: list[int]
) -> None:
    docs, gt_triples, ranked_triples = case
    gt = [span(docs, *t) for t in gt_triples]
    ranked = [chunk(docs, *t) for t in ranked_triples]
    tokens = ChunkTokenStarts()
    got = context_budget_metrics(gt, ranked, tokens, budgets)
    assert [b.budget for b in got.budgets] == budgets
    for scored in got.budgets:
        expected = naive_scores(gt, ranked, scored.budget)
        assert (scored.span_recall, scored.span_precision, scored.span_iou) == pytest.approx(
            expected, abs=1e-12
        )
        kept = budgeted_spans(ranked, scored.budget, tokens)
        assert {(s.doc_id, i) for s in kept for i in range(s.start, s.end)} == naive_budgeted(
            ranked, scored.budget
        )
    assert got.context_tokens == sum(len(ENCODING.encode_ordinary(c.text)) for c in ranked)


@settings(max_examples=200, deadline=None)
@given(cases(), st.integers(0, 80))
def test_a_cut_lands_on_a_token_start_inside_its_chunk_and_never_splits_a_character(
    case: tuple[Docs, list[Triple], list[Triple]], budget: int
) -> None:
    docs, _, ranked_triples = case
    ranked = [chunk(docs, *t) for t in ranked_triples]
    kept = budgeted_spans(ranked, budget, ChunkTokenStarts())
    assert len(kept) <= len(ranked)
    for got, c in zip(kept, ranked, strict=False):
        assert (got.doc_id, got.start) == (c.doc_id, c.start)
        assert got.text == docs[c.doc_id][got.start : got.end]
        if got.end < c.end:  # the cut chunk: the last one kept, at the start of a token it could not pay for
            assert got is kept[-1]
            assert got.end - c.start in cl100k_tokenizer().token_starts(c.text)
    # tokens paid: those of the whole chunks kept, and those of the cut chunk that end before the cut
    paid = sum(
        sum(1 for start in cl100k_tokenizer().token_starts(c.text) if start < got.end - c.start)
        for got, c in zip(kept, ranked, strict=False)
    )
    assert paid <= budget


def test_a_character_split_into_byte_tokens_is_kept_only_when_all_its_tokens_fit() -> None:
    docs = {"d": "xab😀c"}
    whole = chunk(docs, "d", 1, 5)  # "ab😀c": tokens "ab", the emoji's first three bytes, its last, "c"
    assert list(ChunkTokenStarts().of(whole)) == [0, 2, 2, 3]
    ends = [[s.end for s in budgeted_spans([whole], b, ChunkTokenStarts())] for b in range(6)]
    # 2 tokens pay for half the emoji: the cut stays before it; 3 keep it whole
    assert ends == [[], [3], [3], [4], [5], [5]]
    assert [len(naive_budgeted([whole], b)) for b in range(6)] == [0, 2, 2, 3, 4, 4]


@settings(max_examples=200, deadline=None)
@given(cases(), st.integers(0, 40), st.integers(0, 40))
def test_a_larger_budget_keeps_everything_a_smaller_one_keeps(
    case: tuple[Docs, list[Triple], list[Triple]], small: int, extra: int
) -> None:
    docs, gt_triples, ranked_triples = case
    gt = [span(docs, *t) for t in gt_triples]
    ranked = [chunk(docs, *t) for t in ranked_triples]
    tokens = ChunkTokenStarts()
    low, high = context_budget_metrics(gt, ranked, tokens, [small, small + extra]).budgets
    assert high.span_recall >= low.span_recall

    def chars(budget: int) -> set[tuple[str, int]]:
        return {(s.doc_id, i) for s in budgeted_spans(ranked, budget, tokens) for i in range(s.start, s.end)}

    assert chars(small) <= chars(small + extra)


def test_recall_grows_with_the_default_budgets_on_long_chunks() -> None:
    words = " ".join(f"w{i} 語😀" for i in range(1500))  # ~7,500 tokens: every budget cuts somewhere
    docs = {"d": words}
    size = len(words) // 6
    ranked = [chunk(docs, "d", i * size, (i + 1) * size) for i in (3, 0, 5, 1)]
    gt = [span(docs, "d", 0, len(words))]
    got = context_budget_metrics(gt, ranked, ChunkTokenStarts())
    assert [b.budget for b in got.budgets] == list(CONTEXT_BUDGETS) == [500, 1000, 2000]
    recalls = [b.span_recall for b in got.budgets]
    assert 0 < recalls[0] < recalls[1] < recalls[2] < span_metrics(gt, ranked).span_recall
    assert [b.span_precision for b in got.budgets] == [1.0, 1.0, 1.0]
    assert all(naive_scores(gt, ranked, b.budget)[0] == pytest.approx(b.span_recall) for b in got.budgets)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_a_budget_above_the_whole_retrieval_gives_the_plain_span_metrics(
    case: tuple[Docs, list[Triple], list[Triple]],
) -> None:
    docs, gt_triples, ranked_triples = case
    gt = [span(docs, *t) for t in gt_triples]
    ranked = [chunk(docs, *t) for t in ranked_triples]
    tokens = ChunkTokenStarts()
    total = context_budget_metrics(gt, ranked, tokens, []).context_tokens
    plain = span_metrics(gt, ranked)
    for b in context_budget_metrics(gt, ranked, tokens, [total, total + 1, 10_000]).budgets:
        assert (b.span_recall, b.span_precision, b.span_iou) == (
            plain.span_recall,
            plain.span_precision,
            plain.span_iou,
        )


def test_an_empty_retrieval_scores_zero_and_costs_nothing() -> None:
    docs = {"d": "some text"}
    got = context_budget_metrics([span(docs, "d", 0, 4)], [], ChunkTokenStarts())
    assert got.context_tokens == 0
    assert got.columns() == {**dict.fromkeys(BUDGET_METRICS, 0.0), "context_tokens": 0.0}
    assert list(got.columns()) == [*BUDGET_METRICS, "context_tokens"]
    assert BUDGET_METRICS[:3] == ("span_recall_500t", "span_precision_500t", "span_iou_500t")
    assert "span_recall_1000t" in BUDGET_METRICS and "span_iou_2000t" in BUDGET_METRICS


def test_bad_inputs_are_refused() -> None:
    docs = {"d": "some text"}
    wrong = RetrievedChunk(QuestionId("q"), 1, ChunkId("c"), DocumentId("d"), 0, 4, 1.0, "some text")
    with pytest.raises(ValueError, match="chunk 'c' spans d\\[0:4\\] but holds 9 characters"):
        budgeted_spans([wrong], 10, ChunkTokenStarts())
    with pytest.raises(ValueError, match="cannot be negative"):
        budgeted_spans([chunk(docs, "d", 0, 4)], -1, ChunkTokenStarts())
    with pytest.raises(ValueError, match="ground-truth"):
        context_budget_metrics([], [chunk(docs, "d", 0, 4)], ChunkTokenStarts())


class CountingTokenizer:
    """cl100k, counting the texts it tokenizes."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.fingerprint = cl100k_tokenizer().fingerprint

    def token_starts(self, text: str) -> list[int]:
        self.texts.append(text)
        return cl100k_tokenizer().token_starts(text)

    def count_tokens(self, texts: list[str]) -> list[int]:
        raise AssertionError("the budget reads token starts only")


def test_the_score_step_tokenizes_each_distinct_chunk_once_a_process(
    tiny_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once in a partition, and once for all of them: another profile's partition retrieving the same
    chunks (its own ``token_level_result``) tokenizes none again."""
    corpus = Corpus.from_folder(tiny_project / "data" / "corpus")
    dataset = read_token_level_jsonl(tiny_project / "data" / "datasets" / "golden_token_level.jsonl", corpus)
    chunks = chunk_corpus(FixedSizeChunker(60, 0), corpus)
    top = chunks[:3]  # every question retrieves the same three chunks, in rotating order
    hits = {
        e.question_id: [
            RetrievedChunk(e.question_id, rank, c.chunk_id, c.doc_id, c.start, c.end, 1.0, c.text)
            for rank, c in enumerate(top[i % 3 :] + top[: i % 3], start=1)
        ]
        for i, e in enumerate(dataset)
    }
    counting = CountingTokenizer()
    monkeypatch.setattr(context_budget, "cl100k_tokenizer", lambda: counting)
    context_budget._cl100k_starts.cache_clear()
    result = token_level_result(dataset.examples, hits, chunks, 3, corpus)
    assert len(dataset) > 1 and sorted(counting.texts) == sorted(c.text for c in top)
    again = token_level_result(dataset.examples, hits, chunks, 3, corpus)
    assert sorted(counting.texts) == sorted(c.text for c in top)
    assert [r.metrics for r in again.raw_results] == [r.metrics for r in result.raw_results]
    context_budget._cl100k_starts.cache_clear()  # the counting tokenizer's answers are not cl100k's
    size = sum(len(ENCODING.encode_ordinary(c.text)) for c in top)
    for r, e in zip(result.raw_results, dataset, strict=True):
        assert r.metrics["context_tokens"] == size
        for budget in CONTEXT_BUDGETS:  # three 60-character chunks fit every budget
            for metric in ("span_recall", "span_precision", "span_iou"):
                assert r.metrics[f"{metric}_{budget}t"] == r.metrics[metric]
        assert r.metrics["span_recall"] == span_metrics(e.relevant_spans, hits[e.question_id]).span_recall
    assert result.metrics["context_tokens"].mean == size
