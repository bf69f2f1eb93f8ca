"""Semantic de-duplication and the retrievability filter, with the real MiniLM embedder."""

from __future__ import annotations

from typing import Any

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.quality import (
    deduplicate,
    filter_unretrievable_chunk_level,
    filter_unretrievable_token_level,
)
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId
from rag_eval_pipeline_tests.conftest import TINY_DOCS, tiny_corpus


def example(qid: str, query: str, doc_id: str, excerpt: str) -> TokenLevelExample:
    start = TINY_DOCS[doc_id].index(excerpt)
    span = CharacterSpan(DocumentId(doc_id), start, start + len(excerpt), excerpt)
    return TokenLevelExample(QuestionId(qid), query, (span,), {"source_doc_ids": [doc_id]})


PUMP = ("alpha/pumps.md", "The main pump runs at 1,450 rpm")
SHIFT = ("beta/staff.md", "Zoë Mbeki leads the night shift.")


def test_paraphrases_above_the_threshold_are_rejected_with_the_question_they_repeat(minilm: Any) -> None:
    examples = [
        example("q1", "How fast does the main pump run?", *PUMP),
        example("q2", "At what speed does the main pump run?", *PUMP),  # cosine 0.96 with q1
        example("q3", "Who leads the night shift?", *SHIFT),
        example("q4", "How fast does the main pump run ?", *PUMP),  # the same words as q1
    ]
    strict = deduplicate(examples, minilm, threshold=0.9)
    assert [e.question_id for e in strict.examples] == ["q1", "q3"]
    assert [r.reason for r in strict.rejections] == ["duplicate", "duplicate"]
    assert "with q1" in strict.rejections[0].detail and strict.rejections[0].question == examples[1].query
    lenient = deduplicate(examples, minilm, threshold=0.99)
    assert [e.question_id for e in lenient.examples] == ["q1", "q2", "q3"]


def test_questions_no_retriever_ties_to_their_source_are_rejected(minilm: Any) -> None:
    corpus = tiny_corpus()
    assert isinstance(corpus, Corpus)
    good = example("good", "How fast does the main pump run?", *PUMP)
    # a question about the shift whose reference points at the pump text: wrong source
    wrong = example("wrong", "Who leads the night shift?", *PUMP)
    result = filter_unretrievable_token_level([good, wrong], corpus, minilm, top_n=1)
    assert [e.question_id for e in result.examples] == ["good"]
    (rejection,) = result.rejections
    assert rejection.reason == "unretrievable" and "top 1" in rejection.detail
    assert filter_unretrievable_token_level([good, wrong], corpus, minilm, top_n=0).rejections == ()


def test_chunk_level_retrievability_checks_the_source_chunk_ids(minilm: Any) -> None:
    from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker, chunk_corpus
    from rag_eval_pipeline.core.questions.datasets import ChunkLevelExample

    corpus = tiny_corpus()
    assert isinstance(corpus, Corpus)
    chunks = chunk_corpus(RecursiveCharacterChunker(120, 0), corpus)
    pump = next(c for c in chunks if "1,450 rpm" in c.text)
    staff = next(c for c in chunks if "night shift" in c.text)
    examples = [
        ChunkLevelExample(QuestionId("a"), "How fast does the main pump run?", (pump.chunk_id,)),
        ChunkLevelExample(QuestionId("b"), "How fast does the main pump run?", (staff.chunk_id,)),
    ]
    result = filter_unretrievable_chunk_level(examples, chunks, minilm, top_n=1)
    assert [e.question_id for e in result.examples] == ["a"]
    assert [r.metadata["question_id"] for r in result.rejections] == ["b"]


def test_new_questions_are_compared_with_the_kept_ones_which_are_never_rejected(minilm: Any) -> None:
    """A per-document regeneration: the kept questions of the other documents stay; a new question that
    repeats one of them is the duplicate."""
    kept = [example("k1", "How fast does the main pump run?", *PUMP)]
    new = [
        example("n1", "At what speed does the main pump run?", *PUMP),
        example("n2", "Who leads the night shift?", *SHIFT),
    ]
    result = deduplicate(new, minilm, threshold=0.9, known=kept)
    assert [e.question_id for e in result.examples] == ["n2"]
    assert [r.reason for r in result.rejections] == ["duplicate"] and "with k1" in result.rejections[0].detail
